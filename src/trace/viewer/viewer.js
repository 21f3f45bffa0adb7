/*
 * tpsim view: steps through a tpsim trace embedded in this page
 * (docs/viewer.md). Plain ES2017, no libraries, no network.
 *
 * Only the current event is drawn. Each rank's shard is a grid of cells
 * coloured by value on a diverging scale (blue negative, white 0, red
 * positive; +-max|v| over the event's values), at most MAX_CELLS rows and
 * columns of it, with a sentence saying what is left out.
 *
 * Which part of the global tensor a rank holds is the chunk rule of
 * tps_chunk_range (tensor.h) applied as tps_dtensor_local_region applies
 * it: for each mesh dim in mesh order whose placement is shard(d) or
 * shard(d,block=b), the current range of tensor dim d, n elements = n/b
 * units, is cut into k = the mesh dim's size chunks of ceil(units/k)
 * units; the rank's coordinate i on that mesh dim takes chunk i, starting
 * at min(i*c, units) and as long as what is left of c (trailing chunks
 * short or empty). replicate and partial do not narrow it. checkAll()
 * compares the rule with every rank's shape in the trace.
 */
(function () {
  "use strict";
  var startMs = performance.now();

  var MAX_CELLS = 64; /* rows and columns drawn per panel */
  var MAX_PANELS = 4; /* leading-dim panels drawn per rank */
  var MAX_CARDS = 16; /* rank cards drawn with values */
  var MAX_FLOW_GROUPS = 8;
  var MAX_FLOW_RANKS = 16;
  var NUMBERS_MAX = 64; /* cells of a panel small enough to print values */
  /* Up to this many cells a panel is one element per cell, each with its
   * value in its title and aria-label; past it a canvas (32,768 elements
   * take a second to lay out), whose cells are read out on hover and on
   * focus, with the arrow keys. */
  var DOM_CELLS = 256;

  /* The canvases of the current event: what each one draws. */
  var canvases = [];

  var EQUATIONS = {
    all_reduce: "%T = sum_i %T_i, on every rank of the group",
    all_gather: "%T = concat_i %T_i, on every rank of the group",
    reduce_scatter: "%T_i = chunk_i(sum_j %T_j)",
    broadcast: "%T_i = %T_0, the group's first rank's",
    scatter: "%T_i = chunk_i(%T_0)",
    all_to_all: "%T_i = concat_j chunk_i(%T_j)",
    split: "%T_i = chunk_i(%T), no communication"
  };

  var $ = function (id) { return document.getElementById(id); };

  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c];
    });
  }

  /* ---- the trace ----------------------------------------------------- */

  var trace = null;
  var loadError = null;
  try {
    trace = JSON.parse($("trace").textContent);
    if (!trace || trace.format !== "tpsim.trace" || !Array.isArray(trace.events)) {
      loadError = "the embedded JSON is not a tpsim trace";
      trace = null;
    }
  } catch (e) {
    loadError = "no trace embedded (make this page with tpsim view TRACE -o FILE.html)";
  }

  var parsedMs = performance.now();
  var events = trace ? trace.events : [];
  var mesh = trace && trace.mesh ? trace.mesh : { shape: [1], dim_names: ["world"], world_size: 1 };
  var meshShape = mesh.shape;
  var meshNames = mesh.dim_names;
  var world = meshShape.reduce(function (a, b) { return a * b; }, 1);

  function coordOf(rank) {
    var c = new Array(meshShape.length);
    for (var i = meshShape.length - 1; i >= 0; i--) {
      c[i] = rank % meshShape[i];
      rank = Math.floor(rank / meshShape[i]);
    }
    return c;
  }

  /* "shard(1,block=2)" -> {kind: "shard", dim: 1, block: 2, flat: false};
   * "shard(0,flat)": one of the mesh dims that split dim 0 as one chunk
   * over their flattened group (dtensor.h); "shard(0,local)" and
   * "shard(0,flat,local)": split after the other mesh dims, a chunk of
   * each rank's local tensor (ZeRO, docs/zero.md). */
  function parsePlacement(p, ndim) {
    var m = /^shard\((-?\d+)(?:,block=(\d+)|(,flat)?(,local)?)\)$/.exec(p);
    if (m) {
      var d = Number(m[1]);
      if (d < 0) d += ndim;
      return { kind: "shard", dim: d, block: m[2] ? Number(m[2]) : 1,
               flat: !!m[3], local: !!m[4] };
    }
    return { kind: p === "partial" ? "partial" : "replicate", dim: -1, block: 1,
             flat: false, local: false };
  }

  /* tps_chunk_range: chunk i of n over k. */
  function chunkRange(n, k, i) {
    var c = Math.ceil(n / k);
    var s = Math.min(c * i, n);
    return [s, Math.min(n - s, c)];
  }

  /* The region of the global tensor a rank holds: {offset, length}. */
  function regionOf(shape, placements, rank) {
    var n = shape.length;
    var off = [], len = [];
    for (var d = 0; d < n; d++) { off.push(0); len.push(shape[d]); }
    var coord = coordOf(rank);
    var flatDone = {};
    /* The local shards after every other (dtensor.h). */
    for (var k = 0; k < 2 * meshShape.length; k++) {
      var i = k % meshShape.length;
      var p = parsePlacement(placements[i], n);
      if (p.kind !== "shard" || p.dim < 0 || p.dim >= n) continue;
      if (p.local !== (k >= meshShape.length)) continue;
      var size = meshShape[i], index = coord[i];
      if (p.flat) {
        /* The whole flattened group at its first mesh dim, row-major. */
        var key = p.dim + (p.local ? "l" : "");
        if (flatDone[key]) continue;
        flatDone[key] = true;
        for (var j = i + 1; j < meshShape.length; j++) {
          var q = parsePlacement(placements[j], n);
          if (q.kind === "shard" && q.flat && q.local === p.local &&
              q.dim === p.dim) {
            index = index * meshShape[j] + coord[j];
            size *= meshShape[j];
          }
        }
      }
      var r = chunkRange(len[p.dim] / p.block, size, index);
      off[p.dim] += r[0] * p.block;
      len[p.dim] = r[1] * p.block;
    }
    return { offset: off, length: len };
  }

  /* Mesh dims (of size > 1) whose placement is of this kind. */
  function dimsOfKind(placements, kind, ndim) {
    var out = [];
    for (var i = 0; i < meshShape.length; i++) {
      if (meshShape[i] > 1 && parsePlacement(placements[i], ndim).kind === kind) {
        out.push(meshNames[i]);
      }
    }
    return out;
  }

  function fmtShape(s) {
    return "(" + s.join(", ") + ")";
  }

  /* "rows 0-3", "row 2", "rows none", as tpsim picture writes ranges. */
  function fmtRange(one, many, off, len) {
    if (len === 0) return many + " none";
    if (len === 1) return one + " " + off;
    return many + " " + off + "-" + (off + len - 1);
  }

  function fmtRegion(reg, leadingOnly) {
    var n = reg.offset.length;
    var parts = [];
    var lead = n > 2 ? n - 2 : 0;
    for (var d = 0; d < lead; d++) {
      parts.push(fmtRange("dim" + d, "dim" + d, reg.offset[d], reg.length[d]));
    }
    if (!leadingOnly) {
      if (n === 0) parts.push("the scalar");
      else if (n === 1) parts.push(fmtRange("element", "elements", reg.offset[0], reg.length[0]));
      else {
        parts.push(fmtRange("row", "rows", reg.offset[n - 2], reg.length[n - 2]));
        parts.push(fmtRange("col", "cols", reg.offset[n - 1], reg.length[n - 1]));
      }
    }
    return parts.join(", ");
  }

  /* "ranks 0-3,6": runs of three or more as a-b. */
  function fmtRanks(rs) {
    var out = [];
    for (var i = 0; i < rs.length;) {
      var j = i;
      while (j + 1 < rs.length && rs[j + 1] === rs[j] + 1) j++;
      if (j - i >= 2) { out.push(rs[i] + "-" + rs[j]); i = j + 1; }
      else { out.push(String(rs[i])); i++; }
    }
    return (rs.length === 1 ? "rank " : "ranks ") + out.join(",");
  }

  function fmtCoord(rank) {
    var c = coordOf(rank);
    return meshNames.map(function (n, i) { return n + "=" + c[i]; }).join(", ");
  }

  function fmtNumber(v) {
    return String(v);
  }

  /* A size for people, by numfmt.h's rule (tps_format_bytes): the exact
   * count under 1024 bytes, then binary units with three significant
   * digits, half up, trailing zeros dropped ("1.5 KiB", "896 MiB"). Exact
   * for the trace's integers below 2^53: a unit is a power of two. */
  var UNITS = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  function fmtBytes(n) {
    if (!(n >= 1024)) return n + (n === 1 ? " byte" : " bytes");
    for (var u = 0; ; u++) {
      var unit = Math.pow(2, 10 * (u + 1));
      var whole = Math.floor(n / unit);
      if (whole >= 1024 && u + 1 < UNITS.length) continue;
      var d = whole < 10 ? 2 : whole < 100 ? 1 : 0;
      var p = [1, 10, 100][d];
      var scaled = whole * p + Math.floor(((n - whole * unit) / unit) * p + 0.5);
      if (d === 0 && scaled >= 1024 && u + 1 < UNITS.length) continue;
      var ip = Math.floor(scaled / p), frac = scaled % p;
      while (d > 0 && frac % 10 === 0) { frac /= 10; d--; }
      return ip + (d > 0 ? "." + String(frac).padStart(d, "0") : "") + " " + UNITS[u];
    }
  }

  /* A short form for a cell's face; the title has the whole number. */
  function shortNumber(v) {
    var s = String(v);
    if (s.length <= 6) return s;
    var t = String(Number(v.toPrecision(3)));
    return t.length <= 7 ? t : v.toExponential(1);
  }

  /* ---- what happened before each event -------------------------------- */

  /* The placements each event's tensor had before it (for layouts and
   * collectives), as tpsim explain shows "before -> after". */
  var before = [];
  (function () {
    var last = Object.create(null);
    for (var i = 0; i < events.length; i++) {
      var ev = events[i];
      var prev = last[ev.tensor];
      before.push(ev.kind !== "compute" && prev ? prev : null);
      last[ev.tensor] = ev.placements;
    }
  })();

  /* The input of each collective: the latest earlier event of the same
   * tensor, whose ranks hold what the collective read (the addends of an
   * all_reduce); -1 for other events, or when none came before. */
  var inputOf = [];
  (function () {
    var last = Object.create(null);
    for (var i = 0; i < events.length; i++) {
      var ev = events[i];
      inputOf.push(ev.kind === "collective" && ev.tensor in last ? last[ev.tensor] : -1);
      last[ev.tensor] = i;
    }
  })();

  /* What a collective's input and output are called on a rank card. */
  var IO_WORDS = {
    all_reduce: ["addend", "sum"],
    reduce_scatter: ["addend", "its chunk of the sum"],
    all_gather: ["shard", "gathered"]
  };

  /* ---- filters and position ------------------------------------------ */

  var state = { list: [], pos: 0, phase: "", module: "", rank: -1 };

  function distinct(key) {
    var seen = Object.create(null), out = [];
    events.forEach(function (ev) {
      var v = ev[key];
      if (v !== undefined && !seen[v]) { seen[v] = true; out.push(v); }
    });
    return out;
  }

  function fillSelect(sel, values, label) {
    var html = '<option value="">all ' + label + "</option>";
    values.forEach(function (v) {
      html += '<option value="' + esc(v) + '">' + esc(v) + "</option>";
    });
    sel.innerHTML = html;
  }

  function refilter(keepIndex) {
    state.list = [];
    for (var i = 0; i < events.length; i++) {
      var ev = events[i];
      if (state.phase && ev.phase !== state.phase) continue;
      if (state.module && ev.module !== state.module) continue;
      state.list.push(i);
    }
    var pos = 0;
    if (keepIndex !== undefined) {
      while (pos < state.list.length - 1 && state.list[pos] < keepIndex) pos++;
    }
    state.pos = pos;
    var slider = $("slider");
    slider.max = String(Math.max(0, state.list.length - 1));
    $("count").textContent = state.list.length === events.length
      ? events.length + " events"
      : state.list.length + " of " + events.length + " events";
  }

  function currentIndex() {
    return state.list.length ? state.list[state.pos] : -1;
  }

  function go(pos) {
    if (!state.list.length) { draw(); return; }
    state.pos = Math.max(0, Math.min(state.list.length - 1, pos));
    draw();
  }

  /* ---- drawing -------------------------------------------------------- */

  function valueColor(v, scale) {
    var t = scale > 0 ? Math.max(-1, Math.min(1, v / scale)) : 0;
    var end = t < 0 ? [33, 102, 172] : [178, 24, 43];
    var a = Math.abs(t);
    var rgb = [0, 1, 2].map(function (k) {
      return Math.round(255 * (1 - a) + end[k] * a);
    });
    return "rgb(" + rgb.join(",") + ")";
  }

  function textColor(v, scale) {
    return scale > 0 && Math.abs(v / scale) > 0.6 ? "#fff" : "#000";
  }

  function maxAbs(v, m) {
    if (typeof v === "number") return Math.max(m, Math.abs(v));
    for (var i = 0; i < v.length; i++) m = maxAbs(v[i], m);
    return m;
  }

  function drawEvent(ev, idx) {
    var h = [];
    var pos = "[" + ev.seq + "] " + esc(ev.module) + " " + esc(ev.op) + " " + esc(ev.tensor);
    h.push("<h2>" + pos + "</h2>");
    var meta = [];
    meta.push("phase " + esc(ev.phase) + (ev.step !== undefined ? ", step " + ev.step : ""));
    meta.push("kind " + esc(ev.kind));
    var pl = "[" + ev.placements.map(esc).join(", ") + "]";
    if (before[idx]) pl = "[" + before[idx].map(esc).join(", ") + "] &rarr; " + pl;
    meta.push("placements " + pl);
    meta.push("global " + fmtShape(ev.global_shape));
    if (ev.mesh_dim !== undefined && ev.kind !== "compute") {
      meta.push("over " + esc(ev.mesh_dim) + " groups " + esc(JSON.stringify(ev.groups || [])));
    }
    if (ev.bytes_per_rank !== undefined) meta.push(fmtBytes(ev.bytes_per_rank) + "/rank");
    h.push('<p class="meta">' + meta.join(" &middot; ") + "</p>");
    if (ev.mistake) {
      h.push('<p class="mistake">injected mistake: ' + esc(ev.mistake) + "</p>");
    }
    var eq = EQUATIONS[ev.op];
    if (eq) {
      var t = /[`\n]/.test(ev.tensor) || ev.tensor.length > 64 ? "T" : ev.tensor;
      h.push('<p class="eq" id="equation">' + esc(eq.split("%T").join(t)) + "</p>");
    }
    if (ev.note !== undefined) {
      h.push('<p class="note" id="note">(' + esc(ev.note) + ")</p>");
    }
    $("event").innerHTML = h.join("");
  }

  /* Group index of each rank in this event's groups, or -1. */
  function groupOfRank(ev) {
    var g = new Array(world).fill(-1);
    if (ev.kind === "compute" || !Array.isArray(ev.groups)) return g;
    ev.groups.forEach(function (grp, gi) {
      grp.forEach(function (r) { if (r >= 0 && r < world) g[r] = gi; });
    });
    return g;
  }

  function drawMesh(ev) {
    var g = groupOfRank(ev);
    var nd = meshShape.length;
    var cols = meshShape[nd - 1];
    var rows = nd >= 2 ? meshShape[nd - 2] : 1;
    var per = rows * cols;
    var panels = world / per;
    var h = ["<h3>mesh " + fmtShape(meshShape) + " named (" + meshNames.map(esc).join(", ") + ")</h3>"];
    if (world > 256) {
      h.push('<p class="small">' + world + " ranks: too many boxes to draw; groups listed below.</p>");
    } else {
      h.push('<div class="mesh-panels">');
      for (var p = 0; p < panels; p++) {
        h.push("<div>");
        if (panels > 1) {
          var c0 = coordOf(p * per);
          h.push('<div class="axis">' + meshNames.slice(0, nd - 2).map(function (n, i) {
            return esc(n) + "=" + c0[i];
          }).join(", ") + "</div>");
        }
        h.push('<div class="axis">' + (nd >= 2 ? esc(meshNames[nd - 2]) + " &darr; " : "") +
               esc(meshNames[nd - 1]) + " &rarr;</div>");
        h.push('<div class="mesh-grid" style="grid-template-columns: repeat(' + cols + ', auto)">');
        for (var k = 0; k < per; k++) {
          var r = p * per + k;
          var cls = "mesh-rank";
          var tag = "";
          if (g[r] >= 0) {
            cls += " in-group g" + (g[r] % 8);
            tag = '<span class="gtag">group ' + g[r] + "</span>";
          }
          if (state.rank === r) cls += " selected";
          h.push('<div class="' + cls + '" data-rank="' + r + '" data-group="' + g[r] +
                 '" title="rank ' + r + " (" + esc(fmtCoord(r)) +
                 (g[r] >= 0 ? "), in group " + g[r] + " of this " + esc(ev.op) : ")") + '">' +
                 "<b>" + r + "</b>" + esc(coordOf(r).join(",")) + tag + "</div>");
        }
        h.push("</div></div>");
      }
      h.push("</div>");
    }
    if (ev.kind !== "compute" && Array.isArray(ev.groups)) {
      var shown = ev.groups.slice(0, 8).map(function (grp, gi) {
        return "group " + gi + ": [" + grp.join(",") + "]";
      }).join("; ");
      h.push('<p class="small" id="mesh-groups">' + esc(ev.op) + " over " + esc(ev.mesh_dim) + ": " +
             esc(shown) + (ev.groups.length > 8 ? "; ... (" + ev.groups.length + " groups)" : "") + "</p>");
    } else {
      h.push('<p class="small">' + esc(ev.kind) + ": no group communicates.</p>");
    }
    $("mesh").innerHTML = h.join("");
  }

  /* Which source sends what to which destination, per op: edges
   * [from member, to member, label]; sum: through a "sum" node. */
  function flowOf(op, n) {
    var e = [], i, j;
    switch (op) {
      case "all_reduce":
        for (i = 0; i < n; i++) e.push([-1, i, "sum"]);
        return { sum: true, edges: e, say: "every rank's addend is summed; every rank gets the sum" };
      case "reduce_scatter":
        for (i = 0; i < n; i++) e.push([-1, i, "chunk " + i]);
        return { sum: true, edges: e, say: "every rank's addend is summed; rank i of the group gets chunk i of the sum" };
      case "all_gather":
        for (i = 0; i < n; i++) for (j = 0; j < n; j++) e.push([i, j, "block " + i]);
        return { sum: false, edges: e, say: "rank i's block goes to every rank; each concatenates them in group order" };
      case "all_to_all":
        for (i = 0; i < n; i++) for (j = 0; j < n; j++) e.push([i, j, "chunk " + j]);
        return { sum: false, edges: e, say: "rank i sends its chunk j to rank j" };
      case "broadcast":
        for (j = 0; j < n; j++) e.push([0, j, "all"]);
        return { sum: false, edges: e, say: "the group's first rank's tensor goes to every rank" };
      case "scatter":
        for (j = 0; j < n; j++) e.push([0, j, "chunk " + j]);
        return { sum: false, edges: e, say: "chunk i of the first rank's tensor goes to rank i" };
      case "split":
        for (i = 0; i < n; i++) e.push([i, i, "chunk " + i]);
        return { sum: false, edges: e, say: "each rank keeps its own chunk; nothing is sent" };
      default:
        return null;
    }
  }

  function drawFlow(ev, idx) {
    var h = ["<h3>collective</h3>"];
    var flow = Array.isArray(ev.groups) ? flowOf(ev.op, ev.groups.length ? ev.groups[0].length : 0) : null;
    if (ev.kind === "compute" || !flow) {
      h.push('<p class="small">' + (ev.kind === "compute"
        ? "A compute: each rank works on its own shard, nothing moves."
        : "No communication drawn for " + esc(ev.op) + ".") + "</p>");
      $("flow").innerHTML = h.join("");
      return;
    }
    h.push('<p class="small" id="flow-say">' + esc(flow.say) + ".</p>");
    var from = before[idx];
    ev.groups.slice(0, MAX_FLOW_GROUPS).forEach(function (grp, gi) {
      var n = Math.min(grp.length, MAX_FLOW_RANKS);
      var w = 70, W = Math.max(n * w + 20, 160), H = flow.sum ? 150 : 110;
      var sx = function (i) { return 10 + i * w + w / 2; };
      var s = ['<svg width="' + W + '" height="' + H + '" role="img" aria-label="group ' + gi +
               ": " + esc(ev.op) + " over ranks " + grp.join(",") + '">'];
      s.push('<defs><marker id="ah' + gi + '" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#555"/></marker></defs>');
      var yTop = 8, yBot = H - 30, yMid = H / 2;
      var edges = flow.edges.filter(function (e) { return e[0] < n && e[1] < n; });
      edges.forEach(function (e) {
        var x2 = sx(e[1]);
        if (e[0] < 0) return;
        var x1 = sx(e[0]);
        s.push('<line x1="' + x1 + '" y1="' + (yTop + 22) + '" x2="' + x2 + '" y2="' + (yBot - 2) +
               '" stroke="#555" marker-end="url(#ah' + gi + ')"><title>rank ' + grp[e[0]] + " &rarr; rank " +
               grp[e[1]] + ": " + esc(e[2]) + "</title></line>");
      });
      if (flow.sum) {
        for (var i = 0; i < n; i++) {
          s.push('<line x1="' + sx(i) + '" y1="' + (yTop + 22) + '" x2="' + (W / 2) + '" y2="' + (yMid - 12) +
                 '" stroke="#b8560b" stroke-dasharray="4 2"/>');
        }
        edges.forEach(function (e) {
          s.push('<line x1="' + (W / 2) + '" y1="' + (yMid + 12) + '" x2="' + sx(e[1]) + '" y2="' + (yBot - 2) +
                 '" stroke="#555" marker-end="url(#ah' + gi + ')"><title>sum &rarr; rank ' + grp[e[1]] + ": " +
                 esc(e[2]) + "</title></line>");
        });
        s.push('<circle cx="' + (W / 2) + '" cy="' + yMid + '" r="12" fill="#fff3ea" stroke="#b8560b"/>');
        s.push('<text x="' + (W / 2) + '" y="' + (yMid + 4) + '" text-anchor="middle">&#931;</text>');
      }
      for (var k = 0; k < n; k++) {
        var r = grp[k];
        var top = from ? regionOf(ev.global_shape, from, r) : null;
        var bot = regionOf(ev.global_shape, ev.placements, r);
        s.push('<rect x="' + (sx(k) - 30) + '" y="' + yTop + '" width="60" height="22" fill="#fff" stroke="#333"/>');
        s.push('<text x="' + sx(k) + '" y="' + (yTop + 15) + '" text-anchor="middle">r' + r + "<title>rank " + r +
               " before: " + esc(top ? fmtRegion(top) : "?") + "</title></text>");
        s.push('<rect x="' + (sx(k) - 30) + '" y="' + yBot + '" width="60" height="22" fill="#fff" stroke="#333"/>');
        s.push('<text x="' + sx(k) + '" y="' + (yBot + 15) + '" text-anchor="middle">r' + r + "<title>rank " + r +
               " after: " + esc(fmtRegion(bot)) + "</title></text>");
      }
      s.push("</svg>");
      h.push('<div class="flow-group g' + (gi % 8) + '" data-group="' + gi + '"><div class="small">group ' + gi +
             " [" + grp.join(",") + "]" + (grp.length > n ? " (first " + n + " drawn)" : "") + "</div>" +
             s.join("") + "</div>");
    });
    if (ev.groups.length > MAX_FLOW_GROUPS) {
      h.push('<p class="elided">showing groups 0-' + (MAX_FLOW_GROUPS - 1) + " of " + ev.groups.length +
             "; every group does the same.</p>");
    }
    $("flow").innerHTML = h.join("");
  }

  /* The blocks of the event's tensor: ranks holding the same region. */
  function blocksOf(ev) {
    var byKey = Object.create(null), blocks = [];
    var shardDims = [];
    ev.placements.forEach(function (p, i) {
      if (parsePlacement(p, ev.global_shape.length).kind === "shard") shardDims.push(i);
    });
    for (var r = 0; r < world; r++) {
      var reg = regionOf(ev.global_shape, ev.placements, r);
      var c = coordOf(r);
      var key = shardDims.map(function (i) { return c[i]; }).join(",");
      if (!byKey[key]) {
        byKey[key] = { region: reg, ranks: [], coord: shardDims.map(function (i) { return meshNames[i] + "=" + c[i]; }) };
        blocks.push(byKey[key]);
      }
      byKey[key].ranks.push(r);
    }
    return blocks;
  }

  function blockLabel(ev, b) {
    var nd = ev.global_shape.length;
    var s = fmtRegion(b.region) + ": " + fmtRanks(b.ranks);
    var extra = b.coord.slice();
    var part = dimsOfKind(ev.placements, "partial", nd);
    var rep = dimsOfKind(ev.placements, "replicate", nd);
    var tail = [];
    if (part.length) tail.push("partial sum over " + part.join(", "));
    if (rep.length) tail.push("replicated over " + rep.join(", "));
    var inner = extra.join(", ");
    if (tail.length) inner = inner ? inner + "; " + tail.join("; ") : tail.join("; ");
    if (inner) s += " (" + inner + ")";
    if (b.region.length.indexOf(0) >= 0) s += ": empty, a " + fmtShape(b.region.length) + " shard";
    return s;
  }

  function blockName(i) {
    var s = "";
    i++;
    while (i > 0) { s = String.fromCharCode(65 + ((i - 1) % 26)) + s; i = Math.floor((i - 1) / 26); }
    return s;
  }

  /* The one legend of every picture (picture.h's tps_picture_styles, in
   * the same words; test_picture checks them): a line per kind of
   * placement the tensor has, "shard over tp: ...". */
  var KINDS = [
    { kind: "shard", name: "shard",
      legend: "a block of the tensor that only the ranks listed hold" },
    { kind: "replicate", name: "replicate",
      legend: "every rank listed holds the same copy of its block" },
    { kind: "partial", name: "partial sum",
      legend: "every rank listed holds a full-size addend (a name ending in +, A+), and the block's value is " +
              "their sum over the group" }
  ];

  function legendOf(ev) {
    var nd = ev.global_shape.length;
    var h = ['<ul class="blegend" id="block-legend">'];
    KINDS.forEach(function (k) {
      var dims = dimsOfKind(ev.placements, k.kind, nd);
      if (!dims.length) return;
      h.push('<li data-kind="' + k.kind + '"><span class="swatch ' + k.kind + '" aria-hidden="true"></span>' +
             esc(k.name + " over " + dims.join(", ") + ": " + k.legend + ".") + "</li>");
    });
    h.push("</ul>");
    return h.join("");
  }

  function drawBlocks(ev) {
    var nd = ev.global_shape.length;
    var partial = dimsOfKind(ev.placements, "partial", nd).length > 0;
    var blocks = blocksOf(ev);
    var h = ["<h3>blocks of " + esc(ev.tensor) + " " + fmtShape(ev.global_shape) + "</h3>"];
    var R = nd >= 2 ? ev.global_shape[nd - 2] : 1, C = nd >= 1 ? ev.global_shape[nd - 1] : 1;
    var side = 200;
    var sc = Math.min(side / Math.max(R, 1), side / Math.max(C, 1), 40);
    var W = Math.max(8, Math.round(C * sc)), H = Math.max(8, Math.round(R * sc));
    /* One map per leading-dims range, as tpsim picture draws panels. */
    var panels = [], panelOf = Object.create(null);
    blocks.forEach(function (b, bi) {
      if (b.region.length.indexOf(0) >= 0) return;
      var key = fmtRegion(b.region, true);
      if (!(key in panelOf)) { panelOf[key] = panels.length; panels.push({ key: key, items: [] }); }
      panels[panelOf[key]].items.push(bi);
    });
    panels.slice(0, 4).forEach(function (p) {
      if (p.key) h.push('<div class="panel-label">' + esc(p.key) + "</div>");
      h.push('<div class="bmap" style="width:' + (W + 2) + "px;height:" + (H + 2) + 'px">');
      p.items.forEach(function (bi) {
        var b = blocks[bi];
        var ro = nd >= 2 ? b.region.offset[nd - 2] : 0, rl = nd >= 2 ? b.region.length[nd - 2] : 1;
        var co = nd >= 1 ? b.region.offset[nd - 1] : 0, cl = nd >= 1 ? b.region.length[nd - 1] : 1;
        var name = blockName(bi) + (partial ? "+" : "");
        var cls = "blk" + (partial ? " partial" : blocks.length > 1 ? " shard" : " replicate");
        h.push('<div class="' + cls + '" style="left:' + Math.round(co * sc) + "px;top:" + Math.round(ro * sc) +
               "px;width:" + Math.max(4, Math.round(cl * sc)) + "px;height:" + Math.max(4, Math.round(rl * sc)) +
               'px" title="' + esc(name + "  " + blockLabel(ev, b)) + '"><span>' + esc(name) + "</span></div>");
      });
      h.push("</div>");
    });
    if (panels.length > 4) h.push('<p class="elided">showing 4 of ' + panels.length + " panels</p>");
    h.push('<ul class="blist" id="block-list">');
    blocks.slice(0, 26).forEach(function (b, bi) {
      h.push("<li>" + esc((blockName(bi) + (partial ? "+" : "") + "   ").slice(0, 4) + blockLabel(ev, b)) + "</li>");
    });
    if (blocks.length > 26) h.push("<li>... " + blocks.length + " blocks</li>");
    h.push("</ul>");
    h.push(legendOf(ev));
    $("blocks").innerHTML = h.join("");
  }

  /* Value at [lead..., r, c] of a nested array in local shape s. */
  function at(values, s, lead, r, c) {
    var v = values;
    var nd = s.length;
    if (nd === 0) return v;
    for (var i = 0; i < lead.length; i++) v = v[lead[i]];
    if (nd === 1) return v[c];
    return v[r][c];
  }

  /* Every index tuple of the leading dims (all but the last two). */
  function leadingIndices(s) {
    var lead = s.slice(0, Math.max(0, s.length - 2));
    var out = [[]];
    lead.forEach(function (n) {
      var next = [];
      out.forEach(function (pre) {
        for (var i = 0; i < n; i++) next.push(pre.concat([i]));
      });
      out = next;
    });
    return out;
  }

  /* "fc.out[1, 1] = 174 (rank 0's [1, 1])": a cell's text alternative. */
  function cellLabel(ev, rk, reg, lead, r, c) {
    var nd = rk.shape.length;
    var ro = nd >= 2 ? reg.offset[nd - 2] : 0, co = nd >= 1 ? reg.offset[nd - 1] : 0;
    var gi = lead.map(function (x, i) { return x + reg.offset[i]; })
      .concat(nd >= 2 ? [ro + r, co + c] : nd === 1 ? [co + c] : []);
    var li = lead.concat(nd >= 2 ? [r, c] : nd === 1 ? [c] : []);
    return ev.tensor + "[" + gi.join(", ") + "] = " + fmtNumber(at(rk.values, rk.shape, lead, r, c)) +
      " (rank " + rk.rank + "'s [" + li.join(", ") + "])";
  }

  function paintCanvas(el, cur) {
    var job = canvases[Number(el.getAttribute("data-canvas"))];
    var ctx = el.getContext("2d");
    var px = job.px;
    for (var r = 0; r < job.rows; r++) {
      for (var c = 0; c < job.cols; c++) {
        ctx.fillStyle = valueColor(at(job.rk.values, job.rk.shape, job.lead, r, c), job.scale);
        ctx.fillRect(c * px, r * px, px, px);
      }
    }
    if (cur) {
      ctx.strokeStyle = "#000";
      ctx.lineWidth = 2;
      ctx.strokeRect(cur[1] * px + 1, cur[0] * px + 1, px - 2, px - 2);
    }
  }

  function drawGrid(ev, rk, reg, scale, panelLead) {
    var s = rk.shape, nd = s.length;
    var R = nd >= 2 ? s[nd - 2] : 1, C = nd >= 1 ? s[nd - 1] : 1;
    var rr = Math.min(R, MAX_CELLS), cc = Math.min(C, MAX_CELLS);
    var ro = nd >= 2 ? reg.offset[nd - 2] : 0, co = nd >= 1 ? reg.offset[nd - 1] : 0;
    var h = [];
    if (R > rr || C > cc) {
      var say = [];
      if (R > rr) say.push("rows " + ro + "-" + (ro + rr - 1) + " of " + R + " (" + ro + "-" + (ro + R - 1) + ")");
      if (C > cc) say.push("cols " + co + "-" + (co + cc - 1) + " of " + C + " (" + co + "-" + (co + C - 1) + ")");
      h.push('<p class="elided">showing ' + say.join(", ") + " (the first " + MAX_CELLS + " of each)</p>");
    }
    var numbers = rr * cc <= NUMBERS_MAX && cc <= 8;
    var name = esc(ev.tensor);
    if (rr * cc > DOM_CELLS) {
      var px = Math.max(4, Math.min(12, Math.floor(512 / cc)));
      canvases.push({ ev: ev, rk: rk, reg: reg, lead: panelLead, scale: scale, rows: rr, cols: cc, px: px });
      h.push('<canvas class="grid canvas" tabindex="0" role="img" data-canvas="' + (canvases.length - 1) +
             '" data-rank="' + rk.rank + '" data-rows="' + rr + '" data-cols="' + cc + '" width="' + cc * px +
             '" height="' + rr * px + '" aria-label="rank ' + rk.rank + "'s shard of " + name + ", " + rr + " by " + cc +
             ' cells drawn; hover, or focus and use the arrow keys, to read each value"></canvas>');
      return h.join("");
    }
    h.push('<div class="grid' + (numbers ? " numbers" : "") + '" role="grid" tabindex="0" data-rank="' + rk.rank +
           '" data-rows="' + rr + '" data-cols="' + cc + '" aria-label="rank ' + rk.rank + "'s shard of " + name +
           ", " + rr + " by " + cc + ' cells; arrow keys move between cells" style="grid-template-columns: repeat(' +
           cc + ', auto)">');
    for (var r = 0; r < rr; r++) {
      h.push('<div role="row" style="display:contents">');
      for (var c = 0; c < cc; c++) {
        var v = at(rk.values, s, panelLead, r, c);
        var label = esc(cellLabel(ev, rk, reg, panelLead, r, c));
        h.push('<div class="cell" role="gridcell" data-r="' + r + '" data-c="' + c + '" data-v="' + fmtNumber(v) +
               '" title="' + label + '" aria-label="' + label + '" style="background:' + valueColor(v, scale) +
               ";color:" + textColor(v, scale) + '">' + (numbers ? esc(shortNumber(v)) : "") + "</div>");
      }
      h.push("</div>");
    }
    h.push("</div>");
    return h.join("");
  }

  /* A rank's shard of an event's tensor: its grid(s) of values, its
   * statistics, or its shape; an empty shard says so. */
  function shardBody(ev, rk, reg, scale, symbolic) {
    var c = [];
    if (rk.shape.indexOf(0) >= 0) {
      c.push('<span class="badge empty">empty</span><div class="empty-shard">empty shard ' + fmtShape(rk.shape) +
             ": holds no elements</div>");
    } else if (rk.values !== undefined) {
      var leads = leadingIndices(rk.shape);
      leads.slice(0, MAX_PANELS).forEach(function (lead) {
        if (lead.length) {
          c.push('<div class="panel-label">' + lead.map(function (x, i) {
            return "dim" + i + " " + (x + reg.offset[i]);
          }).join(", ") + "</div>");
        }
        c.push(drawGrid(ev, rk, reg, scale, lead));
      });
      if (leads.length > MAX_PANELS) {
        c.push('<p class="elided">showing ' + MAX_PANELS + " of " + leads.length +
               " panels (the leading dims' first indices)</p>");
      }
    } else if (rk.min !== undefined || rk.hash !== undefined) {
      c.push('<table class="stats"><tbody>' + ["min", "max", "mean", "hash"].filter(function (k) {
        return rk[k] !== undefined;
      }).map(function (k) {
        return "<tr><td>" + k + "</td><td class=\"mono\">" + esc(fmtNumber(rk[k])) + "</td></tr>";
      }).join("") + "</tbody></table>");
    } else {
      c.push('<p class="stats">shape ' + fmtShape(rk.shape) + (symbolic ? " (from the placements)" : "") + "</p>");
    }
    return c.join("");
  }

  function drawRanks(ev, idx) {
    canvases = [];
    var nd = ev.global_shape.length;
    var part = dimsOfKind(ev.placements, "partial", nd);
    var rep = dimsOfKind(ev.placements, "replicate", nd);
    var shard = ev.placements.some(function (p) { return parsePlacement(p, nd).kind === "shard"; });
    var ranks = ev.ranks;
    var symbolic = !Array.isArray(ranks);
    if (symbolic) {
      ranks = [];
      for (var r = 0; r < world; r++) {
        ranks.push({ rank: r, shape: regionOf(ev.global_shape, ev.placements, r).length });
      }
    }
    var hasValues = ranks.some(function (rk) { return rk.values !== undefined; });
    /* A collective's input, read from its ranks in the event before:
     * shown beside each rank's output, on the same colour scale. */
    var inEv = inputOf[idx] >= 0 ? events[inputOf[idx]] : null;
    var inRanks = inEv && Array.isArray(inEv.ranks) ? inEv.ranks : [];
    var inOf = Object.create(null);
    inRanks.forEach(function (rk) { inOf[rk.rank] = rk; });
    var shown = state.rank >= 0 ? ranks.filter(function (rk) { return rk.rank === state.rank; }) : ranks;
    var cap = hasValues ? MAX_CARDS : 64;
    var h = [];
    var scale = 0;
    if (hasValues) {
      ranks.concat(inRanks).forEach(function (rk) { if (rk.values !== undefined) scale = maxAbs(rk.values, scale); });
      h.push('<div class="legend" style="flex-basis:100%" id="legend"><span>' + fmtNumber(-scale) +
             '</span><span class="ramp" role="img" aria-label="colour scale: blue ' + fmtNumber(-scale) +
             ", white 0, red " + fmtNumber(scale) + '"></span><span>' + fmtNumber(scale) +
             "</span><span>blue negative, white 0, red positive; each cell's value on hover or focus</span></div>");
    } else {
      h.push('<p class="small" style="flex-basis:100%">' + (symbolic
        ? "A symbolic trace: no values. Each rank's shape follows from global_shape and the placements (the chunk rule)."
        : "No values in this trace (\"values\": \"" + esc(((trace.config || {}).trace || {}).values || "none") +
          "\"): shapes" + (ranks.some(function (rk) { return rk.min !== undefined || rk.hash !== undefined; })
          ? " and statistics" : "") + " only.") + "</p>");
    }
    if (shown.length > cap) {
      h.push('<p class="elided" style="flex-basis:100%">showing ranks ' + shown[0].rank + "-" + shown[cap - 1].rank +
             " of " + ranks.length + "; pick one with the rank filter.</p>");
      shown = shown.slice(0, cap);
    }
    shown.forEach(function (rk) {
      var reg = regionOf(ev.global_shape, ev.placements, rk.rank);
      var cls = "card" + (part.length ? " partial" : rep.length && !shard ? " replicate" : " shard");
      if (state.rank === rk.rank) cls += " selected";
      var c = ['<article class="' + cls + '" data-rank="' + rk.rank + '" aria-label="rank ' + rk.rank + '">'];
      c.push("<h3>rank " + rk.rank + ' <span class="small">(' + esc(fmtCoord(rk.rank)) + ")</span></h3>");
      c.push('<p class="region">' + esc(fmtRegion(reg)) + " of " + fmtShape(ev.global_shape) + "; local " +
             fmtShape(rk.shape) + "</p>");
      if (part.length) {
        c.push('<span class="badge partial" data-kind="partial">partial sum: &#931; over ' + esc(part.join(", ")) +
               "</span>");
      }
      if (shard) c.push('<span class="badge shard" data-kind="shard">shard</span>');
      if (rep.length) {
        c.push('<span class="badge replicate" data-kind="replicate">replica: copy over ' + esc(rep.join(", ")) +
               "</span>");
      }
      var inRk = inOf[rk.rank];
      if (inRk && (inRk.values !== undefined || inRk.min !== undefined || inRk.hash !== undefined)) {
        var words = IO_WORDS[ev.op] || ["before", "after"];
        var inReg = regionOf(inEv.global_shape, inEv.placements, rk.rank);
        c.push('<div class="io"><div class="part input" data-part="input"><p class="panel-label">' +
               esc(words[0]) + " (input: [" + inEv.seq + "] " + esc(inEv.op) + ", [" +
               inEv.placements.map(esc).join(", ") + "])</p>" +
               shardBody(inEv, inRk, inReg, scale, false).replace(/class="grid/g, 'class="grid input') +
               '</div><div class="io-arrow" aria-hidden="true">&rarr;</div>' +
               '<div class="part output" data-part="output"><p class="panel-label">' + esc(words[1]) +
               " (output)</p>" + shardBody(ev, rk, reg, scale, symbolic) + "</div></div>");
      } else {
        c.push(shardBody(ev, rk, reg, scale, symbolic));
      }
      c.push("</article>");
      h.push(c.join(""));
    });
    $("ranks").innerHTML = h.join("");
    Array.prototype.forEach.call($("ranks").querySelectorAll("canvas.grid"), function (el) {
      paintCanvas(el, null);
    });
  }

  /* Ranks whose shape in the trace is not the block the placements give. */
  function mismatches(ev) {
    var out = [];
    if (!Array.isArray(ev.ranks)) return out;
    ev.ranks.forEach(function (rk) {
      var reg = regionOf(ev.global_shape, ev.placements, rk.rank);
      if (reg.length.join(",") !== rk.shape.join(",")) {
        out.push("event " + ev.seq + ": rank " + rk.rank + "'s shape " + fmtShape(rk.shape) +
                 " is not the block its placements give, " + fmtShape(reg.length));
      }
    });
    return out;
  }

  function draw() {
    var idx = currentIndex();
    var slider = $("slider");
    if (idx < 0) {
      $("position").textContent = "no event matches the filters";
      ["event", "mesh", "flow", "blocks", "ranks"].forEach(function (id) { $(id).innerHTML = ""; });
      return;
    }
    var ev = events[idx];
    slider.value = String(state.pos);
    slider.setAttribute("aria-valuetext", "seq " + ev.seq + ", " + ev.op + " " + ev.tensor);
    $("position").textContent = "event " + (idx + 1) + " of " + events.length + " \u00b7 seq " + ev.seq;
    $("position").setAttribute("data-seq", String(ev.seq));
    drawEvent(ev, idx);
    drawMesh(ev);
    drawFlow(ev, idx);
    drawBlocks(ev);
    drawRanks(ev, idx);
    var bad = mismatches(ev);
    $("warnings").innerHTML = bad.map(function (s) { return "<p>" + esc(s) + "</p>"; }).join("");
    try {
      history.replaceState(null, "", "#seq=" + ev.seq);
    } catch (e) { /* a page without history (some file: contexts) */ }
  }

  /* ---- keyboard and pointer ------------------------------------------ */

  function moveCursor(grid, r, c) {
    var rows = Number(grid.getAttribute("data-rows")), cols = Number(grid.getAttribute("data-cols"));
    r = Math.max(0, Math.min(rows - 1, r));
    c = Math.max(0, Math.min(cols - 1, c));
    if (grid.tagName === "CANVAS") {
      var job = canvases[Number(grid.getAttribute("data-canvas"))];
      grid.setAttribute("data-r", String(r));
      grid.setAttribute("data-c", String(c));
      paintCanvas(grid, [r, c]);
      $("readout").textContent = cellLabel(job.ev, job.rk, job.reg, job.lead, r, c);
      return;
    }
    var old = grid.querySelector(".cursor");
    if (old) old.classList.remove("cursor");
    var cell = grid.querySelector('.cell[data-r="' + r + '"][data-c="' + c + '"]');
    if (cell) {
      cell.classList.add("cursor");
      $("readout").textContent = cell.getAttribute("aria-label");
    }
  }

  function gridKey(e, grid) {
    var cur = grid.tagName === "CANVAS" ? grid : grid.querySelector(".cursor");
    var r = cur ? Number(cur.getAttribute("data-r") || 0) : 0;
    var c = cur ? Number(cur.getAttribute("data-c") || 0) : 0;
    var moves = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
    if (moves[e.key]) { moveCursor(grid, r + moves[e.key][0], c + moves[e.key][1]); }
    else if (e.key === "Home") { moveCursor(grid, r, 0); }
    else if (e.key === "End") { moveCursor(grid, r, Infinity); }
    else if (e.key === "Escape") { grid.blur(); }
    else return;
    e.preventDefault();
    e.stopPropagation();
  }

  function onKey(e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var t = e.target;
    var grid = t && t.classList && t.classList.contains("grid") ? t : null;
    if (grid) { gridKey(e, grid); return; }
    if (t && (t.tagName === "SELECT" || t.tagName === "INPUT" || t.tagName === "TEXTAREA")) return;
    var to = { ArrowLeft: state.pos - 1, ArrowRight: state.pos + 1, Home: 0, End: state.list.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    go(to);
  }

  function wire() {
    fillSelect($("f-phase"), distinct("phase"), "phases");
    fillSelect($("f-module"), distinct("module"), "modules");
    var rs = [];
    for (var r = 0; r < world; r++) rs.push(String(r));
    fillSelect($("f-rank"), rs, "ranks");
    $("first").addEventListener("click", function () { go(0); });
    $("prev").addEventListener("click", function () { go(state.pos - 1); });
    $("next").addEventListener("click", function () { go(state.pos + 1); });
    $("last").addEventListener("click", function () { go(state.list.length - 1); });
    $("slider").addEventListener("input", function (e) { go(Number(e.target.value)); });
    $("f-phase").addEventListener("change", function (e) {
      state.phase = e.target.value; refilter(currentIndex()); draw();
    });
    $("f-module").addEventListener("change", function (e) {
      state.module = e.target.value; refilter(currentIndex()); draw();
    });
    $("f-rank").addEventListener("change", function (e) {
      state.rank = e.target.value === "" ? -1 : Number(e.target.value); draw();
    });
    document.addEventListener("keydown", onKey);
    $("ranks").addEventListener("mousemove", function (e) {
      var t = e.target;
      if (t.tagName !== "CANVAS" || !t.classList.contains("grid")) return;
      var job = canvases[Number(t.getAttribute("data-canvas"))];
      var box = t.getBoundingClientRect();
      var c = Math.floor((e.clientX - box.left) / job.px), r = Math.floor((e.clientY - box.top) / job.px);
      if (r < 0 || c < 0 || r >= job.rows || c >= job.cols) return;
      var label = cellLabel(job.ev, job.rk, job.reg, job.lead, r, c);
      t.title = label;
      $("readout").textContent = label;
    });
    $("ranks").addEventListener("mouseover", function (e) {
      var t = e.target;
      if (t.classList && t.classList.contains("cell")) $("readout").textContent = t.getAttribute("aria-label");
    });
    $("ranks").addEventListener("focusin", function (e) {
      var t = e.target;
      if (t.classList.contains("grid") && (t.tagName === "CANVAS" ? !t.hasAttribute("data-r") : !t.querySelector(".cursor"))) {
        moveCursor(t, 0, 0);
      }
    });
    $("ranks").addEventListener("click", function (e) {
      var t = e.target;
      if (t.classList && t.classList.contains("cell")) {
        var grid = t.parentNode.parentNode;
        grid.focus();
        moveCursor(grid, Number(t.getAttribute("data-r")), Number(t.getAttribute("data-c")));
      }
    });
  }

  function about() {
    var cfg = trace.config || {};
    var values = Array.isArray(events[0] && events[0].ranks) ? ((cfg.trace || {}).values || "full") : "none";
    if (cfg.compute === "symbolic") values = "symbolic";
    var res = trace.result || {};
    var verdict = res.match === true ? "matches the reference" : res.match === false ? "differs from the reference" : "";
    if (res.max_abs_diff !== undefined) verdict += " (max_abs_diff " + res.max_abs_diff + ")";
    $("about").textContent = (trace.generator || "tpsim") + " trace: mesh " + fmtShape(meshShape) + " (" +
      meshNames.join(", ") + "), " + (cfg.mode || "inference") + ", values " + values +
      (verdict ? "; result " + verdict : "");
  }

  /* ---- start ---------------------------------------------------------- */

  var api = {
    ready: false,
    eventCount: events.length,
    go: function (seq) {
      var i = 0;
      while (i < state.list.length && events[state.list[i]].seq !== seq) i++;
      if (i < state.list.length) go(i);
      return i < state.list.length;
    },
    current: function () { var i = currentIndex(); return i < 0 ? null : events[i].seq; },
    regionOf: regionOf,
    fmtBytes: fmtBytes,
    /* Every rank of every event against the chunk rule: [] when all agree. */
    checkAll: function () {
      var out = [];
      events.forEach(function (ev) { out = out.concat(mismatches(ev)); });
      return out;
    }
  };
  window.tpsimViewer = api;

  if (!trace) {
    $("event").innerHTML = '<p class="warning">' + esc(loadError) + "</p>";
  } else {
    wire();
    about();
    refilter();
    var m = /^#seq=(\d+)$/.exec(location.hash);
    if (!(m && api.go(Number(m[1])))) go(0);
  }
  api.ready = true;
  /* ms from navigation start: the script starts (the page's HTML, the
   * trace included, is parsed), the trace is parsed, the first event is
   * drawn. */
  api.startMs = startMs;
  api.parsedMs = parsedMs;
  api.readyMs = performance.now();
  document.documentElement.setAttribute("data-ready", "1");
})();
