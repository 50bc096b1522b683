// The exercise page: a code editor (CodeMirror 5, when its files loaded), the size check
// before sending, submitting through the JSON API, and the grading followed live.
// Without this script (or without CodeMirror) the page is a plain form with a textarea that
// posts to the server, which refuses the same things with the same messages.
(function () {
  "use strict";

  var script = document.currentScript;
  var apiUrl = script.getAttribute("data-api"); // POST here, GET apiUrl + "/" + id
  var reportUrl = script.getAttribute("data-report"); // "/submissions/0/": 0 is replaced
  var strings = JSON.parse(document.getElementById("exercise-strings").textContent);
  var form = document.getElementById("submit-form");
  var live = document.getElementById("live-status");
  var table = document.getElementById("submissions");
  if (!form || !live || !window.fetch) return; // the plain form still works

  var isCode = form.getAttribute("data-kind") === "code";
  var maxBytes = parseInt(form.getAttribute("data-max-bytes") || "0", 10);
  var textarea = document.getElementById("code");
  var sizeError = document.getElementById("size-error");
  var button = document.getElementById("submit-button");
  var editor = null;

  function format(text, values) {
    return text.replace(/\{(\w+)\}/g, function (all, key) {
      return key in values ? String(values[key]) : all;
    });
  }

  // ---------------------------------------------------------------- the editor

  if (isCode && textarea && window.CodeMirror) {
    editor = window.CodeMirror.fromTextArea(textarea, {
      mode: "python",
      lineNumbers: true,
      indentUnit: 4,
      tabSize: 4,
      indentWithTabs: false,
      smartIndent: true, // Enter keeps the indentation (and indents after a colon)
      // On a phone, long lines wrap instead of hiding off the screen's edge.
      lineWrapping: window.matchMedia("(max-width: 40rem)").matches,
      // The default viewport: only the visible lines are drawn, so a huge paste stays fast.
      extraKeys: {
        Tab: function (cm) {
          if (cm.somethingSelected()) cm.indentSelection("add");
          else cm.replaceSelection("    ", "end");
        },
        "Shift-Tab": function (cm) {
          cm.indentSelection("subtract");
        },
        // A keyboard user must be able to leave: Esc hands the focus to the submit button.
        Esc: function () {
          button.focus();
        },
      },
    });
    // The code scrolls in CodeMirror's own box, and a keyboard user scrolls it by moving the
    // cursor in the editor's input, which Tab reaches; tabindex -1 tells checkers (axe-core's
    // scrollable-region-focusable) the box can take the focus without adding a second tab stop.
    editor.getScrollerElement().setAttribute("tabindex", "-1");
    var field = editor.getInputField();
    field.setAttribute("aria-labelledby", "solution-heading");
    field.setAttribute("aria-describedby", "editor-help size-error");
  }

  function code() {
    return editor ? editor.getValue() : textarea.value;
  }

  function byteLength(text) {
    if (window.TextEncoder) return new TextEncoder().encode(text).length;
    return unescape(encodeURIComponent(text)).length;
  }

  // The grader's own limit, checked before anything is sent: over it, nothing is queued.
  function sizeProblem() {
    if (!isCode || !maxBytes) return "";
    var size = byteLength(code());
    return size > maxBytes ? format(strings.too_big, { size: size }) : "";
  }

  function showSize() {
    if (sizeError) sizeError.textContent = sizeProblem();
  }

  if (isCode && textarea) {
    var pending = null;
    var later = function () {
      clearTimeout(pending);
      pending = setTimeout(showSize, 150);
    };
    if (editor) editor.on("change", later);
    else textarea.addEventListener("input", later);
    showSize();
  }

  var reset = document.getElementById("reset-starter");
  if (reset) {
    reset.addEventListener("click", function (event) {
      event.preventDefault();
      if (!window.confirm(strings.reset_confirm)) return;
      var starter = JSON.parse(document.getElementById("starter-code").textContent);
      if (editor) {
        editor.setValue(starter);
        editor.focus();
      } else {
        textarea.value = starter;
      }
      showSize();
    });
  }

  // ---------------------------------------------------------------- the submission list

  function rowFor(id) {
    return table ? table.querySelector('tr[data-submission="' + id + '"]') : null;
  }

  function badge(kind, text) {
    var span = document.createElement("span");
    span.className = "badge " + kind;
    span.textContent = text;
    return span;
  }

  function addRow(data) {
    if (!table || rowFor(data.id)) return;
    var body = table.tBodies[0];
    var empty = body.querySelector("tr.empty");
    if (empty) empty.remove();
    var row = document.createElement("tr");
    row.setAttribute("data-submission", data.id);
    var link = document.createElement("a");
    link.href = reportUrl.replace("/0/", "/" + data.id + "/");
    link.textContent = data.id;
    var cells = ["", "", "cell-status", "cell-verdict", "number cell-score"].map(function (cls) {
      var cell = document.createElement("td");
      if (cls) cell.className = cls;
      row.appendChild(cell);
      return cell;
    });
    cells[0].appendChild(link);
    var when = document.createElement("time");
    var now = new Date();
    when.setAttribute("datetime", now.toISOString());
    try {
      when.textContent = now.toLocaleString(document.documentElement.lang, {
        dateStyle: "medium",
        timeStyle: "short",
      });
    } catch (e) {
      when.textContent = now.toLocaleString();
    }
    cells[1].appendChild(when);
    cells[3].textContent = "—";
    cells[4].textContent = "— / " + strings.max_score;
    body.insertBefore(row, body.firstChild);
    updateRow(data);
  }

  function updateRow(data) {
    var row = rowFor(data.id);
    if (!row) return;
    var status = row.querySelector(".cell-status");
    status.replaceChildren(badge(data.status, strings.status[data.status] || data.status));
    if (data.verdict) {
      row
        .querySelector(".cell-verdict")
        .replaceChildren(badge(data.verdict, strings.verdict[data.verdict] || data.verdict));
    }
    if (data.score !== null && data.score !== undefined) {
      row.querySelector(".cell-score").textContent = data.score + " / " + data.max_score;
    }
  }

  // ---------------------------------------------------------------- the live status

  var attempts = document.querySelector("#attempts-left .count");

  function changeAttempts(delta) {
    if (!attempts) return;
    var left = parseInt(attempts.textContent, 10);
    if (!isNaN(left)) attempts.textContent = Math.max(0, left + delta);
  }

  function say(text, state) {
    live.className = "live-status" + (state ? " " + state : "");
    live.replaceChildren(document.createTextNode(text));
  }

  function describe(data) {
    if (data.status === "queued") {
      var ahead = (data.queue_position || 1) - 1;
      var place = strings.queued_next;
      if (ahead === 1) place = strings.queued_behind_one;
      else if (ahead > 1) place = format(strings.queued_behind, { n: ahead });
      return data.estimated_wait_s ? place + " " + waitText(data.estimated_wait_s) : place;
    }
    if (data.review_reason === "workers_lost") return strings.workers_lost;
    if (data.status === "running") return format(strings.running, { device: strings.device });
    if (data.status === "failed") return strings.failed;
    var text = format(strings.graded, {
      verdict: strings.verdict[data.verdict] || data.verdict || "—",
      score: data.score === null ? "—" : data.score,
      max: data.max_score,
    });
    return data.status === "needs_review" ? text + " " + strings.needs_review : text;
  }

  // The server's estimate from measured grading times, in whole minutes.
  function waitText(seconds) {
    if (seconds < 60) return strings.wait_under_minute;
    return format(strings.wait_minutes, { n: Math.round(seconds / 60) });
  }

  function finished(data) {
    return data.status !== "queued" && data.status !== "running";
  }

  // The submission the live status speaks of: the newest one. An older one still waiting is
  // followed too, but only its row in the list changes.
  var followed = null;

  function follow(id) {
    var delay = 1500;
    followed = String(id);
    (function poll() {
      fetch(apiUrl + "/" + id, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) {
          if (!response.ok) throw new Error(String(response.status));
          return response.json();
        })
        .then(function (data) {
          // The server says when to ask again: seldom far back in a long queue, soon near
          // its front (selectors.poll_after_s).
          delay = data.poll_after_s ? data.poll_after_s * 1000 : 1500;
          updateRow(data);
          if (!finished(data)) {
            if (followed === String(id)) say(describe(data), "");
            setTimeout(poll, delay);
            return;
          }
          if (data.status === "failed" || data.verdict === "rejected") changeAttempts(+1);
          if (followed !== String(id)) return;
          say(describe(data), "finished");
          var link = document.createElement("a");
          link.href = reportUrl.replace("/0/", "/" + id + "/");
          link.textContent = strings.report;
          live.appendChild(document.createTextNode(" "));
          live.appendChild(link);
        })
        .catch(function () {
          delay = Math.min(delay * 2, 15000); // the server or the network is down: back off
          setTimeout(poll, delay);
        });
    })();
  }

  // ---------------------------------------------------------------- sending

  function csrfToken() {
    var input = form.querySelector('input[name="csrfmiddlewaretoken"]');
    return input ? input.value : "";
  }

  function request() {
    var headers = { "X-CSRFToken": csrfToken(), Accept: "application/json" };
    var exercise = form.getAttribute("data-exercise");
    if (isCode) {
      headers["Content-Type"] = "application/json";
      return { headers: headers, body: JSON.stringify({ exercise: exercise, code: code() }) };
    }
    var body = new FormData();
    body.append("exercise", exercise);
    body.append("file", document.getElementById("notebook-file").files[0]);
    return { headers: headers, body: body };
  }

  form.addEventListener("submit", function (event) {
    var problem = sizeProblem();
    if (problem) {
      event.preventDefault();
      sizeError.textContent = problem;
      sizeError.scrollIntoView({ block: "nearest" });
      return;
    }
    event.preventDefault();
    var sent = request();
    button.disabled = true;
    say(strings.submitting, "");
    fetch(apiUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: sent.headers,
      body: sent.body,
    })
      .then(function (response) {
        return response.json().then(function (data) {
          return { ok: response.ok, status: response.status, data: data };
        });
      })
      .then(function (answer) {
        button.disabled = false;
        if (!answer.ok) {
          // Refused (too large, out of attempts, past the deadline...): nothing was queued,
          // and the code stays in the editor.
          var message = (answer.data && answer.data.error) || String(answer.status);
          if (answer.status === 413 && sizeError) {
            sizeError.textContent = message;
            sizeError.scrollIntoView({ block: "nearest" });
            live.replaceChildren();
          } else {
            say(message, "refused");
          }
          return;
        }
        var data = answer.data;
        changeAttempts(-1);
        addRow({ id: data.id, status: data.status, verdict: null, score: null });
        say(describe({ status: data.status, queue_position: null }), "");
        follow(data.id);
      })
      .catch(function () {
        button.disabled = false;
        say(strings.offline, "refused");
      });
  });

  // Submissions still waiting when the page loaded (sent from the form, or before a reload):
  // follow them too, oldest first, so that the live status ends on the newest.
  var waiting = table ? table.querySelectorAll("tr[data-pending]") : [];
  for (var i = waiting.length - 1; i >= 0; i--) follow(waiting[i].getAttribute("data-submission"));
})();
