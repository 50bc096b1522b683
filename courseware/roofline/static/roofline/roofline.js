/* The interactive roofline: redraws from the data embedded in the page, never asks the server.
   Without this script the page still shows the server's answer and the tables. */
(function () {
  "use strict";

  var dataNode = document.getElementById("roofline-data");
  var labelsNode = document.getElementById("roofline-labels");
  if (!dataNode || !labelsNode) return;
  var data = JSON.parse(dataNode.textContent);
  var L = JSON.parse(labelsNode.textContent);

  var SVG_NS = "http://www.w3.org/2000/svg";
  var W = 720, H = 440, M = { left: 84, right: 24, top: 24, bottom: 64 };
  var PREFIXES = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];

  var lang = document.documentElement.lang || undefined;
  function numberFormat(options) {
    try { return new Intl.NumberFormat(lang, options); } catch (e) { return new Intl.NumberFormat(undefined, options); }
  }

  /* Three significant figures with the language's separators, like the server's number(). */
  function num(value) {
    if (!isFinite(value) || value === 0) return String(value);
    var places = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(value))));
    return numberFormat({ maximumFractionDigits: places }).format(value);
  }
  function si(value, unit) {
    for (var i = 0; i < PREFIXES.length; i++) {
      if (Math.abs(value) >= PREFIXES[i][0]) return num(value / PREFIXES[i][0]) + " " + PREFIXES[i][1] + unit;
    }
    return num(value) + " " + unit;
  }
  function seconds(value) {
    if (value >= 1) return num(value) + " s";
    if (value >= 1e-3) return num(value * 1e3) + " ms";
    return num(value * 1e6) + " µs";
  }
  function fill(template, values) {
    return template.replace(/%\((\w+)\)s/g, function (_, name) { return values[name]; });
  }

  function byKey(list, key) {
    for (var i = 0; i < list.length; i++) if (list[i].key === key) return list[i];
    return null;
  }

  var form = document.getElementById("roofline-form");
  var deviceSelect = document.getElementById("roofline-device");
  var roofSet = document.getElementById("roofline-roofs");
  var aiInput = document.getElementById("roofline-ai");
  var slider = document.getElementById("roofline-ai-slider");
  var sliderLabel = document.querySelector("label[for=roofline-ai-slider]");
  var aiError = document.getElementById("roofline-ai-error");
  var opSelect = document.getElementById("roofline-op");
  var svg = document.getElementById("roofline-chart");

  var state = {
    device: byKey(data.devices, data.initial.device) || data.devices[0],
    roofKey: data.initial.roof,
    ai: data.initial.ai,
    op: data.initial.op ? byKey(data.operations, data.initial.op) : null
  };

  function currentRoof() {
    return byKey(state.device.roofs, state.roofKey) || state.device.roofs[0] || null;
  }
  function bandwidth() { return state.device.bandwidthGbps * 1e9; }
  function attainable(ai, roof) {
    var byMemory = ai * bandwidth();
    return roof ? Math.min(roof.flopsPerS, byMemory) : byMemory;
  }

  /* ---------- the form ---------- */

  function renderRoofChoices() {
    var legend = roofSet.querySelector("legend");
    while (roofSet.lastChild && roofSet.lastChild !== legend) roofSet.removeChild(roofSet.lastChild);
    var roof = currentRoof();
    if (!roof) {
      var p = document.createElement("p");
      p.textContent = L.memoryOnly;
      roofSet.appendChild(p);
      return;
    }
    state.device.roofs.forEach(function (r) {
      var label = document.createElement("label");
      var input = document.createElement("input");
      input.type = "radio"; input.name = "roof"; input.value = r.key;
      input.checked = r.key === roof.key;
      label.appendChild(input);
      label.appendChild(document.createTextNode(" " + r.label));
      roofSet.appendChild(label);
    });
    state.roofKey = roof.key;
  }

  function setAi(ai, source) {
    var clamped = Math.min(Math.max(ai, data.range.min), data.range.max);
    state.ai = clamped;
    if (source !== "number") aiInput.value = String(Number(clamped.toPrecision(4)));
    if (source !== "slider") slider.value = String(Math.log10(clamped));
    return clamped === ai;
  }

  function showAiError(message) {
    aiError.textContent = message;
    if (message) aiInput.setAttribute("aria-invalid", "true");
    else aiInput.removeAttribute("aria-invalid");
  }

  /* ---------- the answer ---------- */

  function setText(id, text) { document.getElementById(id).textContent = text; }

  function renderResult() {
    var roof = currentRoof();
    var bound = attainable(state.ai, roof);
    var memoryBinds = !roof || state.ai * bandwidth() < roof.flopsPerS;
    setText("r-device", state.device.name + " — " + state.device.description);
    setText("r-bandwidth", num(state.device.bandwidthGbps) + " GB/s");
    setText("r-roof", roof ? roof.label + ": " + si(roof.flopsPerS, "FLOP/s") : L.notMeasured);
    setText("r-ridge", roof ? num(roof.flopsPerS / bandwidth()) + " FLOP/B" : L.ridgeUnknown);
    setText("r-ai", num(state.ai) + " FLOP/B");
    setText("r-binding", !roof ? L.memoryOnly : memoryBinds ? L.memoryBinds : L.computeBinds);
    setText("r-attainable", si(bound, "FLOP/s"));
    setText("r-fraction", roof ? num(100 * bound / roof.flopsPerS) + " %" : "—");
    var op = state.op;
    document.getElementById("r-op-term").hidden = !op;
    document.getElementById("r-op").hidden = !op;
    if (op) {
      var memoryS = op.bytes / bandwidth();
      var timeS = roof ? Math.max(memoryS, op.flops / roof.flopsPerS) : memoryS;
      setText("r-op", fill(L.operation, { label: op.label, dtype: op.dtype, basis: op.basis, time: seconds(timeS) }));
    }
    var summary = fill(L.summary, {
      device: state.device.name,
      ai: num(state.ai),
      roof: memoryBinds ? L.roofMemory : L.roofCompute,
      rate: si(bound, "FLOP/s")
    });
    setText("roofline-caption", summary);
    setText("roofline-chart-desc", fill(L.chartDescription, { device: state.device.name }) + " " + summary);
  }

  /* ---------- the chart ---------- */

  function el(name, attrs, text) {
    var node = document.createElementNS(SVG_NS, name);
    for (var key in attrs) node.setAttribute(key, attrs[key]);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function drawChart() {
    Array.prototype.slice.call(svg.childNodes).forEach(function (node) {
      if (node.nodeName !== "title" && node.nodeName !== "desc") svg.removeChild(node);
    });
    var roofs = state.device.roofs;
    var roof = currentRoof();
    var bw = bandwidth();
    var xMin = data.range.min, xMax = data.range.max;
    var highest = roofs.reduce(function (m, r) { return Math.max(m, r.flopsPerS); }, 0);
    var yLow = Math.pow(10, Math.floor(Math.log10(bw * xMin)));
    // Room above the highest roof for its label, without a whole empty decade.
    var yHigh = (highest || bw * xMax) * 4;
    var plotW = W - M.left - M.right, plotH = H - M.top - M.bottom;
    function x(v) { return M.left + (Math.log10(v) - Math.log10(xMin)) / (Math.log10(xMax) - Math.log10(xMin)) * plotW; }
    function y(v) { return M.top + (1 - (Math.log10(v) - Math.log10(yLow)) / (Math.log10(yHigh) - Math.log10(yLow))) * plotH; }

    var axes = el("g", { "class": "axes" });
    var tickFormat = numberFormat({ maximumSignificantDigits: 1 });
    for (var e = Math.log10(xMin); e <= Math.log10(xMax); e++) {
      var xv = Math.pow(10, e);
      axes.appendChild(el("line", { x1: x(xv), x2: x(xv), y1: M.top, y2: M.top + plotH, "class": "grid" }));
      axes.appendChild(el("text", { x: x(xv), y: M.top + plotH + 18, "text-anchor": "middle" }, tickFormat.format(xv)));
    }
    for (var f = Math.log10(yLow); f <= Math.log10(yHigh) + 1e-9; f++) {
      var yv = Math.pow(10, f);
      var prefix = "", scale = 1;
      for (var i = 0; i < PREFIXES.length; i++) if (yv >= PREFIXES[i][0]) { scale = PREFIXES[i][0]; prefix = PREFIXES[i][1]; break; }
      axes.appendChild(el("line", { x1: M.left, x2: M.left + plotW, y1: y(yv), y2: y(yv), "class": "grid" }));
      axes.appendChild(el("text", { x: M.left - 8, y: y(yv) + 4, "text-anchor": "end" }, Math.round(yv / scale) + " " + prefix));
    }
    axes.appendChild(el("rect", { x: M.left, y: M.top, width: plotW, height: plotH, "class": "frame" }));
    axes.appendChild(el("text", { x: M.left + plotW / 2, y: H - 16, "text-anchor": "middle", "class": "axis-label" }, L.xAxis));
    axes.appendChild(el("text", { x: 18, y: M.top + plotH / 2, "text-anchor": "middle", "class": "axis-label",
      transform: "rotate(-90 18 " + (M.top + plotH / 2) + ")" }, L.yAxis));
    svg.appendChild(axes);

    var clip = el("clipPath", { id: "roofline-clip" });
    clip.appendChild(el("rect", { x: M.left, y: M.top, width: plotW, height: plotH }));
    svg.appendChild(clip);
    var plot = el("g", { "clip-path": "url(#roofline-clip)" });
    svg.appendChild(plot);

    // The memory roof up to the highest compute roof (or across the chart without one).
    var memoryEnd = highest ? Math.min(xMax, highest / bw) : xMax;
    plot.appendChild(el("line", { x1: x(xMin), y1: y(bw * xMin), x2: x(memoryEnd), y2: y(bw * memoryEnd), "class": "roof memory" }));
    var angle = Math.atan2(y(bw * xMax) - y(bw * xMin), x(xMax) - x(xMin)) * 180 / Math.PI;
    var lx = x(xMin * 4), ly = y(bw * xMin * 4) - 8;
    plot.appendChild(el("text", { x: lx, y: ly, transform: "rotate(" + angle + " " + lx + " " + ly + ")", "class": "roof-label" },
      fill(L.memoryRoof, { bandwidth: num(state.device.bandwidthGbps) + " GB/s" })));

    roofs.forEach(function (r) {
      var ridge = r.flopsPerS / bw;
      var selected = roof && r.key === roof.key;
      plot.appendChild(el("line", { x1: x(Math.max(ridge, xMin)), y1: y(r.flopsPerS), x2: x(xMax), y2: y(r.flopsPerS),
        "class": "roof compute" + (selected ? " selected" : "") }));
      plot.appendChild(el("text", { x: x(xMax) - 6, y: y(r.flopsPerS) - 6, "text-anchor": "end", "class": "roof-label" },
        r.label + " " + si(r.flopsPerS, "FLOP/s")));
    });

    if (roof) {
      var ridgeAi = roof.flopsPerS / bw;
      plot.appendChild(el("polyline", { points: [x(xMin), y(bw * xMin), x(ridgeAi), y(roof.flopsPerS), x(xMax), y(roof.flopsPerS)].join(" "),
        "class": "attainable" }));
      if (ridgeAi >= xMin && ridgeAi <= xMax) {
        plot.appendChild(el("line", { x1: x(ridgeAi), x2: x(ridgeAi), y1: y(roof.flopsPerS), y2: M.top + plotH, "class": "ridge-line" }));
        plot.appendChild(el("circle", { cx: x(ridgeAi), cy: y(roof.flopsPerS), r: 4, "class": "ridge" }));
        plot.appendChild(el("text", { x: x(ridgeAi) + 6, y: M.top + plotH - 6, "class": "ridge-label" },
          fill(L.ridge, { ai: num(ridgeAi) })));
      }
    } else {
      plot.appendChild(el("line", { x1: x(xMin), y1: y(bw * xMin), x2: x(xMax), y2: y(bw * xMax), "class": "attainable" }));
    }

    var op = state.op;
    if (op) {
      var opAi = op.flops / op.bytes;
      if (Math.abs(opAi - state.ai) / state.ai > 0.01 && opAi >= xMin && opAi <= xMax) {
        var ox = x(opAi), oy = y(attainable(opAi, roof));
        plot.appendChild(el("path", { d: "M" + ox + " " + (oy - 6) + " l6 6 l-6 6 l-6 -6 z", "class": "op-marker" }));
        plot.appendChild(el("text", { x: ox + 8, y: oy + 16, "class": "op-label" }, op.label));
      }
    }

    var value = attainable(state.ai, roof);
    var mx = x(state.ai), my = y(value);
    plot.appendChild(el("line", { x1: mx, x2: mx, y1: my, y2: M.top + plotH, "class": "marker-line" }));
    plot.appendChild(el("circle", { cx: mx, cy: my, r: 6, "class": "marker" }));
    var right = mx > M.left + plotW * 0.6;
    plot.appendChild(el("text", { x: right ? mx - 10 : mx + 10, y: my + 20, "text-anchor": right ? "end" : "start", "class": "marker-label" },
      fill(L.marker, { ai: num(state.ai), rate: si(value, "FLOP/s") })));
  }

  /* ---------- wiring ---------- */

  function rememberInAddress() {
    var params = new URLSearchParams();
    params.set("device", state.device.name);
    var roof = currentRoof();
    if (roof) params.set("roof", roof.key);
    params.set("ai", String(Number(state.ai.toPrecision(4))));
    if (state.op) params.set("op", state.op.key);
    history.replaceState(null, "", "?" + params.toString());
  }

  function update() {
    renderResult();
    drawChart();
    rememberInAddress();
  }

  deviceSelect.addEventListener("change", function () {
    var option = deviceSelect.options[deviceSelect.selectedIndex];
    state.device = byKey(data.devices, option.getAttribute("data-key")) || state.device;
    renderRoofChoices();
    update();
  });
  roofSet.addEventListener("change", function (event) {
    if (event.target.name === "roof") { state.roofKey = event.target.value; update(); }
  });
  aiInput.addEventListener("input", function () {
    var value = Number(aiInput.value);
    if (aiInput.value.trim() === "" || !isFinite(value) || value <= 0) { showAiError(L.invalidAi); return; }
    var inRange = setAi(value, "number");
    showAiError(inRange ? "" : fill(L.outOfRange, { low: num(data.range.min), high: num(data.range.max) }));
    update();
  });
  slider.addEventListener("input", function () {
    setAi(Math.pow(10, Number(slider.value)), "slider");
    showAiError("");
    update();
  });
  opSelect.addEventListener("change", function () {
    state.op = byKey(data.operations, opSelect.value);
    if (state.op) { setAi(state.op.flops / state.op.bytes, "op"); showAiError(""); }
    update();
  });
  // Everything is live; the button only serves the page without script.
  form.addEventListener("submit", function (event) { event.preventDefault(); update(); });
  document.getElementById("roofline-submit").hidden = true;

  slider.hidden = false;
  sliderLabel.hidden = false;
  document.getElementById("roofline-figure").hidden = false;
  renderRoofChoices();
  update();
})();
