/* Charts, sortable tables and table filters. No network: everything is local. */
(function () {
  "use strict";

  function drawCharts() {
    if (typeof Plotly === "undefined") return;
    document.querySelectorAll("script[data-plot]").forEach(function (node) {
      var target = document.getElementById(node.getAttribute("data-plot"));
      if (!target) return;
      var fig = JSON.parse(node.textContent);
      Plotly.newPlot(target, fig.data, fig.layout, { responsive: true, displaylogo: false });
    });
  }

  function cellValue(row, index, numeric) {
    var cell = row.cells[index];
    var text = cell ? (cell.getAttribute("data-value") || cell.textContent).trim() : "";
    if (!numeric) return text.toLowerCase();
    var n = parseFloat(text.replace(/[^0-9.+\-eE]/g, ""));
    return isNaN(n) ? -Infinity : n;
  }

  function makeSortable(table) {
    var headers = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(headers, function (th, index) {
      th.tabIndex = 0;
      th.setAttribute("role", "columnheader");
      function sort() {
        var numeric = th.getAttribute("data-sort") === "num";
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(headers, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
          if (x < y) return ascending ? -1 : 1;
          if (x > y) return ascending ? 1 : -1;
          return 0;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  }

  function makeFilter(input) {
    var table = document.getElementById(input.getAttribute("data-filter"));
    if (!table) return;
    input.addEventListener("input", function () {
      var needle = input.value.trim().toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        row.hidden = needle !== "" && row.textContent.toLowerCase().indexOf(needle) === -1;
      });
    });
  }

  document.querySelectorAll("table.sortable").forEach(makeSortable);
  document.querySelectorAll("input[data-filter]").forEach(makeFilter);
  drawCharts();
})();
