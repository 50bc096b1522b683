// Quiz pages, progressively enhanced: answer without reloading the page or losing one's place.
// The form is posted as it would be without JavaScript; the page the server sends back (the
// same one a browser without JavaScript shows) is read, and only the answered question, the
// navigator and the score are swapped in. Nothing is rendered here, so the wording, the
// language and the rules stay the server's.
"use strict";

(function () {
  function swap(page, selector) {
    var fresh = page.querySelector(selector);
    var old = document.querySelector(selector);
    if (fresh && old) {
      old.replaceWith(fresh);
    }
  }

  function showOffline(form) {
    var section = form.closest("section.question");
    var note = section.querySelector(".feedback.offline");
    if (!note) {
      note = document.createElement("div");
      note.className = "feedback error offline";
      note.setAttribute("role", "status");
      note.tabIndex = -1;
      form.before(note);
    }
    note.textContent = form.dataset.offline;
    note.focus();
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.matches("section.question form.answer")) {
      return;
    }
    event.preventDefault();
    var section = form.closest("section.question");
    var button = form.querySelector("button");
    if (button) {
      button.disabled = true;
    }
    fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin" })
      .then(function (response) {
        return response.text().then(function (html) {
          var page = new DOMParser().parseFromString(html, "text/html");
          var fresh = page.getElementById(section.id);
          if (!fresh) {
            // Not a quiz page (signed out, the quiz being updated): show what came back.
            window.location.assign(response.url);
            return;
          }
          section.replaceWith(fresh);
          swap(page, "#quiz-navigator");
          swap(page, "#quiz-score");
          var feedback = fresh.querySelector(".feedback");
          if (feedback) {
            feedback.focus();
          }
        });
      })
      .catch(function () {
        if (button) {
          button.disabled = false;
        }
        showOffline(form);
      });
  });
})();
