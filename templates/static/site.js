/* Charts, menus, the search box, sortable and filterable tables. No network: everything this
   script reads is a local file of the site, loaded with <script> (works from file://).
   Every name from the games is inserted with textContent, never as HTML. */
(function () {
  "use strict";

  var each = function (list, fn) { Array.prototype.forEach.call(list, fn); };

  /* Accent- and case-insensitive text for matching: "Ding Liren" ~ "ding", "Ľubomír" ~ "lubomir". */
  function fold(s) {
    return String(s).normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  }

  /* ---- data loaded on demand ------------------------------------------------------------ */

  /* A shard is a script of the site that stores its data in window.SITE_SHARDS[key]
     (file:// pages may load scripts, not fetch JSON). Each is loaded once. */
  function shard(key) {
    var all = window.SITE_SHARDS;
    return all && Object.prototype.hasOwnProperty.call(all, key) ? all[key] : null;
  }
  var waiting = {}, loaded = {};
  function loadScript(src, then) {
    if (loaded[src]) { then(); return; }
    if (waiting[src]) { waiting[src].push(then); return; }
    waiting[src] = [then];
    var s = document.createElement("script");
    s.src = src;
    s.onload = s.onerror = function () {
      var calls = waiting[src];
      delete waiting[src];
      loaded[src] = true;
      calls.forEach(function (f) { f(); });
    };
    document.head.appendChild(s);
  }

  /* The order of the search index: players first, then by name (code points, as the site
     builder sorts them). */
  function byCodePoints(a, b) {
    var x = Array.from(a), y = Array.from(b);
    for (var i = 0; i < x.length && i < y.length; i++) {
      var d = x[i].codePointAt(0) - y[i].codePointAt(0);
      if (d) return d;
    }
    return x.length - y.length;
  }
  function indexOrder(a, b) {
    if (a.kind !== b.kind) return a.kind === "player" ? -1 : 1;
    return byCodePoints(a.name, b.name);
  }

  /* ---- charts -------------------------------------------------------------------------- */

  /* Plotly reads a little HTML in every string of a figure (<b>, <a href>, <br>, <sub> ...).
     Strings from the games (trace names, point texts, category axis labels, titles with a
     player's name) must show literally, so every string is escaped in full. Markup survives
     only in the templates the site writes (hovertemplate, texttemplate): line breaks,
     sub/superscripts and the hover box's <extra>. A template that begins with its trace's name
     (the page builder put the name in) has that name escaped in full as well. */
  var KEEP = /^<\/?(br|sub|sup|extra)\s*\/?>$/i;
  var TEMPLATES = { hovertemplate: true, texttemplate: true };
  function escapeText(s) {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }
  function escapeTemplate(s) {
    return s.replace(/&/g, "&amp;").replace(/<[^<>]*>|[<>]/g, function (m) {
      return KEEP.test(m) ? m : m.replace(/</g, "&lt;").replace(/>/g, "&gt;");
    });
  }
  function escapeString(s, key, name) {
    if (!Object.prototype.hasOwnProperty.call(TEMPLATES, key)) return escapeText(s);
    if (name && s.indexOf(name) === 0) return escapeText(name) + escapeTemplate(s.slice(name.length));
    return escapeTemplate(s);
  }
  function escapeFigure(v, key, name) {
    if (typeof v === "string") return escapeString(v, key, name);
    if (Array.isArray(v)) return v.map(function (x) { return escapeFigure(x, key, name); });
    if (v && typeof v === "object") {
      var own = typeof v.name === "string" ? v.name : name;
      var out = {};
      Object.keys(v).forEach(function (k) { out[k] = escapeFigure(v[k], k, own); });
      return out;
    }
    return v;
  }

  /* A title as plain text, for the caption of the chart's data table (set with textContent):
     the site writes no markup into titles, so a name in one stays as written. */
  function plainTitle(t) {
    var text = t && typeof t === "object" ? t.text : t;
    return typeof text === "string" ? text : "";
  }

  function cellText(v) {
    if (v === null || v === undefined) return "n/a";
    if (typeof v === "number") return String(Math.round(v * 10000) / 10000);
    return String(v);
  }

  function makeTable(caption, head, rows) {
    var table = document.createElement("table");
    var cap = table.createCaption();
    cap.textContent = caption;
    var tr = table.createTHead().insertRow();
    head.forEach(function (h) {
      var th = document.createElement("th");
      th.scope = "col";
      th.textContent = h;
      tr.appendChild(th);
    });
    var body = table.createTBody();
    rows.forEach(function (r) {
      var row = body.insertRow();
      r.forEach(function (v, i) {
        var cell = i === 0 ? document.createElement("th") : document.createElement("td");
        if (i === 0) cell.scope = "row";
        cell.textContent = cellText(v);
        row.appendChild(cell);
      });
    });
    return table;
  }

  var MAX_CELLS = 20000;

  /* The chart's numbers as tables: its text alternative for screen readers and for copying. */
  function figureTables(fig) {
    var layout = fig.layout || {};
    var title = plainTitle(layout.title) || "Chart";
    var xt = plainTitle(layout.xaxis && layout.xaxis.title) || "x";
    var yt = plainTitle(layout.yaxis && layout.yaxis.title) || "y";
    var tables = [], points = [], cells = 0, errors = false;
    (fig.data || []).forEach(function (t, n) {
      var name = typeof t.name === "string" && t.name ? t.name : "series " + (n + 1);
      if (t.type === "heatmap" && Array.isArray(t.z)) {
        var xs = t.x || t.z[0].map(function (_, i) { return i; });
        cells += t.z.length * xs.length;
        if (cells > MAX_CELLS) return;
        var rows = t.z.map(function (row, i) {
          return [t.y ? t.y[i] : i].concat(row);
        });
        tables.push(makeTable(title + ": " + name, [yt + " \\ " + xt].concat(xs), rows));
        return;
      }
      var x = t.x, y = t.y;
      if (!Array.isArray(y) && Array.isArray(x) && t.orientation === "h") { y = x; x = t.y; }
      if (!Array.isArray(y)) return;
      var err = t.error_y && Array.isArray(t.error_y.array) ? t.error_y : null;
      if (err) errors = true;
      y.forEach(function (v, i) {
        var label = Array.isArray(t.text) ? t.text[i] : (typeof t.text === "string" ? t.text : "");
        var e = "";
        if (err && typeof v === "number" && typeof err.array[i] === "number") {
          var minus = Array.isArray(err.arrayminus) ? err.arrayminus[i] : err.array[i];
          e = cellText(v - minus) + " – " + cellText(v + err.array[i]);
        }
        points.push([name, Array.isArray(x) ? x[i] : i + 1, v, e, label]);
      });
      cells += y.length * 4;
    });
    if (cells > MAX_CELLS) return [];
    if (points.length) {
      var head = ["Series", xt, yt, "Interval (error bar)", "Label"];
      if (!errors) {
        head.splice(3, 1);
        points.forEach(function (p) { p.splice(3, 1); });
      }
      tables.unshift(makeTable(title, head, points));
    }
    return tables;
  }

  function addDataTable(node, fig) {
    var figure = node.closest("figure");
    if (!figure) return;
    var details = document.createElement("details");
    details.className = "chart-data";
    var summary = document.createElement("summary");
    summary.textContent = "The chart's data as a table";
    details.appendChild(summary);
    details.addEventListener("toggle", function () {
      if (!details.open || details.getAttribute("data-built")) return;
      details.setAttribute("data-built", "1");
      var tables = figureTables(fig);
      if (!tables.length) {
        var p = document.createElement("p");
        p.textContent = "Too many values to list here; see the downloads of the page.";
        details.appendChild(p);
      }
      tables.forEach(function (t) {
        var wrap = document.createElement("div");
        wrap.className = "scroll";
        wrap.appendChild(t);
        details.appendChild(wrap);
      });
    });
    figure.appendChild(details);
  }

  /* Plotly (4 MB) is loaded only by pages that have a chart, from beside this script. */
  var SELF = document.currentScript;
  function withPlotly(then) {
    if (typeof Plotly !== "undefined") { then(); return; }
    var s = document.createElement("script");
    s.src = SELF.src.replace(/site\.js([?#].*)?$/, "plotly.min.js");
    s.onload = then;
    document.head.appendChild(s);
  }

  function drawCharts() {
    var nodes = document.querySelectorAll("script[data-plot]");
    if (nodes.length) withPlotly(function () { each(nodes, drawChart); });
  }

  function drawChart(node) {
    var target = document.getElementById(node.getAttribute("data-plot"));
    if (!target) return;
    var fig = JSON.parse(node.textContent);
    var safe = escapeFigure(fig);
    Plotly.newPlot(target, safe.data, safe.layout, { responsive: true, displaylogo: false });
    addDataTable(node, fig);
  }

  /* ---- sortable and filterable tables --------------------------------------------------- */

  var NUMBER = /[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?/i;

  function sortValue(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) return null;
    var raw = cell.getAttribute("data-value");
    var text = (raw !== null ? raw : cell.textContent).trim();
    if (!numeric) return fold(text);
    var m = NUMBER.exec(text.replace(/\u2212/g, "-"));
    return m ? parseFloat(m[0]) : null;
  }

  function makeSortable(table) {
    if (!table.tHead || !table.tBodies.length) return;
    var headers = table.tHead.rows[0].cells;
    each(headers, function (th, index) {
      var button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.title = "Sort by this column";
      button.addEventListener("click", function () {
        var numeric = th.getAttribute("data-sort") === "num";
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        each(headers, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.map.call(body.rows, function (r, i) {
          return { row: r, key: sortValue(r, index, numeric), i: i };
        });
        rows.sort(function (a, b) {
          if (a.key === null || b.key === null) {  /* n/a last, either way */
            if (a.key === b.key) return a.i - b.i;
            return a.key === null ? 1 : -1;
          }
          if (a.key < b.key) return ascending ? -1 : 1;
          if (a.key > b.key) return ascending ? 1 : -1;
          return a.i - b.i;
        });
        var frag = document.createDocumentFragment();
        rows.forEach(function (r) { frag.appendChild(r.row); });
        body.appendChild(frag);
      });
    });
  }

  function makeFilter(input) {
    var table = document.getElementById(input.getAttribute("data-filter"));
    if (!table || !table.tBodies.length) return;
    var count = document.querySelector("[data-count='" + table.id + "']");
    var texts = null;
    function apply() {
      var rows = table.tBodies[0].rows;
      if (!texts) texts = new WeakMap();
      var terms = fold(input.value).split(/\s+/).filter(Boolean);
      var shown = 0;
      each(rows, function (row) {
        var text = texts.get(row);
        if (text === undefined) { text = fold(row.textContent); texts.set(row, text); }
        var ok = terms.every(function (t) { return text.indexOf(t) !== -1; });
        row.hidden = !ok;
        if (ok) shown += 1;
      });
      if (count) count.textContent = terms.length ? shown + " of " + rows.length + " rows shown" : "";
    }
    input.addEventListener("input", apply);
    return apply;
  }

  /* A paged list's box also searches the names on every page of the list: the list's name
     shard (window.SITE_SHARDS[key] = {pages: [[names of page 1], ...], paths: [...]}) is
     loaded at the first focus or keystroke; each match links to its page, filtered to it. */
  var LIST_SHOWN = 20;
  function makeListSearch(input) {
    var out = document.getElementById(input.getAttribute("data-filter") + "-matches");
    if (!out) return;
    var key = input.getAttribute("data-names-key"), root = input.getAttribute("data-root") || "";
    var asked = 0;
    function apply() {
      var terms = fold(input.value).split(/\s+/).filter(Boolean), ticket = ++asked;
      if (!terms.length) { out.hidden = true; out.textContent = ""; return; }
      loadScript(input.getAttribute("data-names"), function () {
        if (ticket !== asked) return;
        var data = shard(key) || { pages: [], paths: [] };
        var found = [], total = 0;
        data.pages.forEach(function (names, p) {
          names.forEach(function (name) {
            var k = fold(name);
            if (!terms.every(function (t) { return k.indexOf(t) !== -1; })) return;
            total += 1;
            if (found.length < LIST_SHOWN) found.push([name, p]);
          });
        });
        out.textContent = "";
        var head = document.createElement("p");
        head.textContent = total + (total === 1 ? " row" : " rows") + " of the whole list" +
          (total ? (total > LIST_SHOWN ? " match; the first " + LIST_SHOWN + ":" : " match:") : " match.");
        out.appendChild(head);
        var ul = document.createElement("ul");
        found.forEach(function (f) {
          var li = document.createElement("li");
          var a = document.createElement("a");
          a.href = root + data.paths[f[1]] + "?q=" + encodeURIComponent(f[0]) +
            "&list=" + encodeURIComponent(input.getAttribute("data-filter"));
          a.textContent = f[0];
          li.appendChild(a);
          li.appendChild(document.createTextNode(" (page " + (f[1] + 1) + ")"));
          ul.appendChild(li);
        });
        out.appendChild(ul);
        out.hidden = false;
      });
    }
    input.addEventListener("focus", function () { loadScript(input.getAttribute("data-names"), function () {}); });
    input.addEventListener("input", apply);
  }

  /* players.html?q=name (the search form's target without JavaScript) fills the filter;
     &list=id (a paged list's match) names which one. */
  function applyQuery(filters) {
    var params = new URLSearchParams(window.location.search);
    var q = params.get("q"), target = params.get("list");
    var input = document.querySelector("input[data-filter]");
    each(document.querySelectorAll("input[data-filter]"), function (i) {
      if (i.getAttribute("data-filter") === target) input = i;
    });
    if (!q || !input) return;
    input.value = q;
    var apply = filters.get(input);
    if (apply) apply();
    if (input.hasAttribute("data-names")) input.dispatchEvent(new Event("input"));
  }

  /* ---- menus ---------------------------------------------------------------------------- */

  function setupMenus() {
    var menus = document.querySelectorAll("nav.menu details");
    each(menus, function (d) {
      d.addEventListener("toggle", function () {
        if (d.open) each(menus, function (o) { if (o !== d) o.open = false; });
      });
      d.addEventListener("focusout", function (e) {
        if (d.open && e.relatedTarget && !d.contains(e.relatedTarget)) d.open = false;
      });
    });
    document.addEventListener("click", function (e) {
      each(menus, function (d) { if (d.open && !d.contains(e.target)) d.open = false; });
    });
    document.addEventListener("keydown", function (e) {
      if (e.key !== "Escape") return;
      each(menus, function (d) {
        if (d.open) { d.open = false; d.querySelector("summary").focus(); }
      });
    });
  }

  /* ---- search box ----------------------------------------------------------------------- */

  function setupSearch() {
    var form = document.querySelector("form.search");
    if (!form) return;
    var input = form.querySelector("input");
    var list = form.querySelector("[role=listbox]");
    var status = form.querySelector("[role=status]");
    var root = form.getAttribute("data-root") || "";
    var matches = [], active = -1, asked = 0, shown = 0, enterPending = false;
    var noop = function () {};

    /* The index in shards: search-index.js lists every gram (two adjacent
       characters of a word of a name, or a one-character word) and how many names hold it;
       search/g<hex>.js holds those names; search/c<hex>.js the matches of a one- or two-character query. A
       query loads the shard of its rarest gram: every match holds it. */
    function shardUrl(name) {
      var index = form.getAttribute("data-index");
      return name === "index" ? index : index.replace(/search-index\.js$/, "search/" + name + ".js");
    }
    function hex(s) {
      return Array.prototype.map.call(new TextEncoder().encode(s), function (b) {
        return (b < 16 ? "0" : "") + b.toString(16);
      }).join("");
    }
    function gramsOf(term) {
      var cs = Array.from(term), out = [];
      for (var i = 0; i + 1 < cs.length; i++) out.push(cs[i] + cs[i + 1]);
      return out;
    }
    function entriesOf(part) {
      var out = [];
      [["player", part.p], ["tournament", part.e]].forEach(function (kind) {
        (kind[1] || []).forEach(function (e) {
          out.push({ name: e[0], path: e[1], info: e[2], kind: kind[0], key: fold(e[0]) });
        });
      });
      return out;
    }
    /* The shards a query needs: {names: [...], top: the c<hex> file (it holds the total)}. */
    function plan(terms, grams) {
      var one = terms.filter(function (t, i) { return terms.indexOf(t) === i; });
      if (one.length === 1 && Array.from(one[0]).length <= 2) {
        var known = Array.from(one[0]).length === 1 ? Object.keys(grams).some(function (g) { return g.indexOf(one[0]) !== -1; }) : Object.prototype.hasOwnProperty.call(grams, one[0]);
        return { names: known ? ["c" + hex(one[0])] : [], top: true };
      }
      var best = null, missing = false;
      terms.forEach(function (t) {
        gramsOf(t).forEach(function (g) {
          if (!Object.prototype.hasOwnProperty.call(grams, g)) { missing = true; return; }
          if (best === null || grams[g] < grams[best]) best = g;
        });
      });
      if (missing) return { names: [] };
      if (best !== null) return { names: ["g" + hex(best)] };
      /* Only one-character terms: every name with the rarest of them (its grams'). */
      var union = null;
      one.forEach(function (c) {
        var gs = Object.keys(grams).filter(function (g) { return Array.from(g).length <= 2 && g.indexOf(c) !== -1; });
        var size = gs.reduce(function (n, g) { return n + grams[g]; }, 0);
        if (union === null || size < union.size) union = { size: size, gs: gs };
      });
      return { names: union.gs.map(function (g) { return "g" + hex(g); }) };
    }
    function withShards(names, then) {
      var left = names.filter(function (n) { return !shard("search/" + n); });
      var count = left.length;
      if (!count) { then(); return; }
      left.forEach(function (n) {
        loadScript(shardUrl(n), function () { count -= 1; if (!count) then(); });
      });
    }
    /* Runs ``then`` once the manifest is loaded (at the first focus or keystroke). */
    function load(then) {
      withShards(["index"], then);
    }
    function close() {
      list.hidden = true;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
      active = -1;
    }

    function highlight(i) {
      each(list.children, function (li, n) { li.setAttribute("aria-selected", n === i ? "true" : "false"); });
      active = i;
      if (i >= 0 && list.children[i]) {
        input.setAttribute("aria-activedescendant", list.children[i].id);
        list.children[i].scrollIntoView({ block: "nearest" });
      } else {
        input.removeAttribute("aria-activedescendant");
      }
    }

    function go(entry) { window.location.href = root + entry.path; }

    function search() {
      var terms = fold(input.value).split(/\s+/).filter(Boolean);
      if (!terms.length) { list.textContent = ""; matches = []; close(); status.textContent = ""; return; }
      var grams = (shard("search/index") || { grams: {} }).grams;
      var p = plan(terms, grams), ticket = ++asked;
      if (p.names.some(function (n) { return !shard("search/" + n); })) {
        /* Never leave the last query's matches to be chosen while this one's shards load. */
        list.textContent = "";
        matches = [];
        active = -1;
        input.removeAttribute("aria-activedescendant");
        status.textContent = "Searching…";
      }
      withShards(p.names, function () {
        if (ticket !== asked) return;  /* a later keystroke wins */
        show(terms, p);
        shown = ticket;
        if (enterPending) { enterPending = false; if (matches.length) go(matches[0]); }
      });
    }

    function show(terms, p) {
      list.textContent = "";
      matches = [];
      var seen = {}, entries = [], total = null;
      p.names.forEach(function (n) {
        var part = shard("search/" + n);
        if (p.top) total = part.n;
        entriesOf(part).forEach(function (e) {
          var id = e.kind + " " + e.path;
          if (!seen[id]) { seen[id] = true; entries.push(e); }
        });
      });
      if (p.names.length > 1) entries.sort(indexOrder);
      entries.forEach(function (e) {
        if (!terms.every(function (t) { return e.key.indexOf(t) !== -1; })) return;
        var first = terms[0];
        var rank = e.key.indexOf(first) === 0 ? 0 : (new RegExp("(^|[\\s,.\\-])" + first.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).test(e.key) ? 1 : 2);
        matches.push({ e: e, rank: rank + (e.kind === "player" ? 0 : 3) });
      });
      matches.sort(function (a, b) { return a.rank - b.rank || (a.e.key < b.e.key ? -1 : a.e.key > b.e.key ? 1 : 0); });
      if (total === null) total = matches.length;
      matches = matches.slice(0, 12).map(function (m) { return m.e; });
      matches.forEach(function (e, i) {
        var li = document.createElement("li");
        li.id = "site-search-option-" + i;
        li.setAttribute("role", "option");
        li.setAttribute("aria-selected", "false");
        var name = document.createElement("span");
        name.textContent = e.name;
        var kind = document.createElement("span");
        kind.className = "kind";
        kind.textContent = e.kind + (e.info ? " · " + e.info : "");
        li.appendChild(name);
        li.appendChild(kind);
        li.addEventListener("mousedown", function (ev) { ev.preventDefault(); go(e); });
        list.appendChild(li);
      });
      if (!matches.length) {
        var none = document.createElement("li");
        none.className = "empty";
        none.textContent = "No player or tournament matches.";
        list.appendChild(none);
      }
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
      active = -1;
      status.textContent = total ? total + (total === 1 ? " match" : " matches") + (total > 12 ? ", first 12 shown" : "") : "No match";
    }

    input.addEventListener("focus", function () { load(input.value ? search : noop); });
    input.addEventListener("input", function () { load(search); });
    input.addEventListener("keydown", function (e) {
      if (e.key === "ArrowDown" && matches.length) {
        e.preventDefault();
        if (list.hidden) search();
        highlight(Math.min(active + 1, matches.length - 1));
      } else if (e.key === "ArrowUp" && matches.length) {
        e.preventDefault();
        highlight(Math.max(active - 1, 0));
      } else if (e.key === "Escape") {
        close();
      } else if (e.key === "Enter" && matches.length && !list.hidden) {
        e.preventDefault();
        go(matches[active >= 0 ? active : 0]);
      } else if (e.key === "Enter" && fold(input.value).trim() && asked > shown) {
        e.preventDefault();  /* Enter before the matches arrive opens the first of them */
        enterPending = true;
      }
    });
    input.addEventListener("blur", function () { window.setTimeout(close, 150); });
  }

  var filters = new Map();
  each(document.querySelectorAll("table.sortable"), makeSortable);
  each(document.querySelectorAll("input[data-filter]"), function (input) {
    var apply = makeFilter(input);
    if (apply) filters.set(input, apply);
  });
  each(document.querySelectorAll("input[data-names]"), makeListSearch);
  applyQuery(filters);
  setupMenus();
  setupSearch();
  drawCharts();
})();
