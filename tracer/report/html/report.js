/* report.js — draws report.html from the JSON in #report-data (written by tracer/report/html.c).
 * Plain DOM, SVG and canvas; no library, nothing fetched. Text from the traced process is
 * only ever put on the page as text (textContent, new Option, canvas fillText). */
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('report-data').textContent);
  /* a flight-recorder dump: its trigger (moment, task), else null */
  var F = D.flight || null;
  var SVG = 'http://www.w3.org/2000/svg';
  var $ = function (id) { return document.getElementById(id); };
  /* the vocabularies, from the tracer's tables (html.c j_vocab): poll results by code, finding
   * kinds by enum value */
  var RESULT = D.poll_results || [];
  var KIND = D.kinds || [];
  var COLORS = { poll0: '#2f6fd6', poll1: '#1e8449', poll2: '#8e44ad', poll3: '#7f8c8d',
    poll4: '#c0392b', pending: '#b8c0cc', runnable: '#f0a030', wake: '#d62828', busy: [192, 57, 43],
    parked: [36, 87, 197] };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    return e;
  }
  function dur(ns) {
    if (ns === null || ns === undefined || isNaN(ns)) return '–';
    var neg = ns < 0; ns = Math.abs(ns);
    var u = [[1e9 * 3600, 'h'], [1e9 * 60, 'm'], [1e9, 's'], [1e6, 'ms'], [1e3, 'µs']];
    var s = null;
    for (var i = 0; i < u.length; i++) {
      if (ns >= u[i][0]) {
        var v = ns / u[i][0];
        s = (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + u[i][1];
        break;
      }
    }
    if (s === null) s = Math.round(ns) + 'ns';
    return (neg ? '−' : '') + s;
  }
  function num(v) { return v === null || v === undefined ? '–' : Number(v).toLocaleString('en-US'); }
  function pct(v) { return v === null || v === undefined || isNaN(v) ? '–' : (v * 100).toFixed(1) + '%'; }

  /* tooltip */
  var tip = $('tip');
  function showTip(ev, text) {
    tip.textContent = text;
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    var r = tip.getBoundingClientRect();
    if (x + r.width > window.innerWidth - 4) x = Math.max(4, ev.clientX - r.width - 10);
    if (y + r.height > window.innerHeight - 4) y = Math.max(4, ev.clientY - r.height - 10);
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  function hideTip() { tip.hidden = true; }

  var sitesById = {};
  (D.sites || []).forEach(function (s) { sitesById[s.id] = s; });
  function siteName(id) {
    if (id === null || id === undefined) return '(site not recorded)';
    var s = sitesById[id];
    return s ? s.loc : '(site not listed)';
  }
  /* a task: Tokio's task id, or its header address in the uprobe fallback */
  function taskId(id) { return D.task_key === 'header_ptr' ? '0x' + Number(id).toString(16) : String(id); }
  function taskName(id) { return 'task ' + taskId(id); }
  function isTriggerTask(pid, id) { return !!F && F.task !== null && F.task === id && F.pid === pid; }
  function pendingRatio(busy, sched, pend) {
    var t = (busy || 0) + (sched || 0) + (pend || 0);
    return t > 0 ? (pend || 0) / t : null;
  }

  /* ---- distributions ---- */
  var BPD = D.bins_per_decade || 5;
  function binLo(b) { return Math.pow(10, b / BPD); }
  function drawHist(fig, h, title) {
    Array.prototype.slice.call(fig.querySelectorAll('svg, .stats, .empty')).forEach(function (n) { n.remove(); });
    if (!h || !h.n) { fig.appendChild(el('p', 'empty', 'No ' + title.toLowerCase() + ' recorded.')); return; }
    if (!h.b) { fig.appendChild(el('p', 'empty', 'Buckets not kept for this site (only for the busiest).')); return; }
    var W = 460, H = 190, L = 46, R = 26, T = 20, B = 28;
    var pairs = [];
    for (var i = 0; i + 1 < h.b.length; i += 2) pairs.push([h.b[i], h.b[i + 1]]);
    var lo = pairs[0][0], hi = pairs[pairs.length - 1][0];
    lo = Math.max(0, Math.floor(lo / BPD) * BPD); hi = Math.ceil((hi + 1) / BPD) * BPD;
    if (hi - lo < BPD * 2) hi = lo + BPD * 2;
    var max = 0; pairs.forEach(function (p) { max = Math.max(max, p[1]); });
    var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img' });
    var bw = (W - L - R) / (hi - lo);
    var x = function (bin) { return L + (bin - lo) * bw; };
    var y = function (c) { return T + (H - T - B) * (1 - c / max); };
    s.appendChild(svg('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#8895a7' }));
    for (var d = lo; d <= hi; d += BPD) {
      s.appendChild(svg('line', { x1: x(d), y1: H - B, x2: x(d), y2: H - B + 4, stroke: '#8895a7' }));
      var t = svg('text', { x: x(d), y: H - B + 16, 'text-anchor': d + BPD > hi ? 'end' : d === lo ? 'start' : 'middle',
        'font-size': 10, fill: '#5f6b7a' });
      t.textContent = dur(binLo(d));
      s.appendChild(t);
    }
    var yl = svg('text', { x: L - 6, y: T + 4, 'text-anchor': 'end', 'font-size': 10, fill: '#5f6b7a' });
    yl.textContent = num(max);
    s.appendChild(yl);
    pairs.forEach(function (p) {
      var r = svg('rect', { x: x(p[0]) + 0.5, y: y(p[1]), width: Math.max(1, bw - 1), height: H - B - y(p[1]), fill: '#2f6fd6' });
      r.addEventListener('mousemove', function (ev) {
        showTip(ev, dur(binLo(p[0])) + ' – ' + dur(binLo(p[0] + 1)) + ': ' + num(p[1]) + ' (' + pct(p[1] / h.n) + ')');
      });
      r.addEventListener('mouseleave', hideTip);
      s.appendChild(r);
    });
    [['p50', '#1e8449'], ['p99', '#c0392b']].forEach(function (q) {
      var v = h[q[0]]; if (!v) return;
      var xv = L + (Math.log10(Math.max(1, v)) * BPD - lo) * bw;
      s.appendChild(svg('line', { x1: xv, y1: T, x2: xv, y2: H - B, stroke: q[1], 'stroke-dasharray': '4 3' }));
      var lt = svg('text', { x: q[0] === 'p50' ? xv - 3 : xv + 3, y: T - 6, 'font-size': 10, fill: q[1],
        'text-anchor': q[0] === 'p50' ? 'end' : 'start' });
      lt.textContent = q[0];
      s.appendChild(lt);
    });
    fig.appendChild(s);
    fig.appendChild(el('div', 'stats', 'n ' + num(h.n) + ' · p50 ' + dur(h.p50) + ' · p90 ' + dur(h.p90) +
      ' · p99 ' + dur(h.p99) + ' · max ' + dur(h.max)));
  }
  function distributions() {
    var sel = $('dist-site');
    sel.appendChild(new Option('All spawn sites', 'all'));
    (D.sites || []).forEach(function (s) {
      if (s.poll && s.poll.b || s.pending && s.pending.b || s.sched && s.sched.b)
        sel.appendChild(new Option(s.loc + (s.type ? '  —  ' + s.type : ''), String(s.id)));
    });
    function show() {
      var src = sel.value === 'all' ? D.all : sitesById[sel.value];
      drawHist($('dist-poll'), src && src.poll, 'Poll time');
      drawHist($('dist-sched'), src && src.sched, 'Scheduling delay');
      drawHist($('dist-pending'), src && src.pending, 'Pending time');
    }
    sel.addEventListener('change', show);
    show();
  }

  /* ---- timeline ---- */
  function timeline() {
    var T = D.timeline || { tasks: [] };
    var tasks = (T.tasks || []).map(function (t) {
      var polls = [], wakes = [], pend = [], runnable = [];
      for (var i = 0; i + 3 < t.p.length; i += 4) polls.push({ b: t.p[i], d: t.p[i + 1], r: t.p[i + 2], w: t.p[i + 3] });
      for (var j = 0; j + 3 < t.w.length; j += 4) wakes.push({ t: t.w[j], src: t.w[j + 1], ww: t.w[j + 2], ref: t.w[j + 3] });
      /* pending: a poll returned Pending → the next wake (or the next poll, or the end);
       * runnable: that wake → the next poll */
      var wi = 0;
      for (var k = 0; k < polls.length; k++) {
        var p = polls[k], end = p.b + p.d, next = k + 1 < polls.length ? polls[k + 1].b : null;
        while (wi < wakes.length && wakes[wi].t < end) wi++;
        if (p.r !== 0) continue;
        var w = wi < wakes.length ? wakes[wi].t : null;
        if (w !== null && (next === null || w <= next)) {
          pend.push([end, w]);
          runnable.push([w, next !== null ? next : (t.end_ns !== undefined ? t.end_ns : T.to_ns)]);
        } else {
          pend.push([end, next !== null ? next : (t.end_ns !== undefined ? t.end_ns : T.to_ns)]);
        }
      }
      return { id: t.id, pid: t.pid, site: t.site, polls: polls, wakes: wakes, pend: pend, runnable: runnable,
        spawn: t.spawn_ns, end: t.end_ns, events: t.events, kept: t.kept };
    });
    var legend = $('tl-legend');
    [['poll → Pending', COLORS.poll0], ['poll → Ready', COLORS.poll1], ['poll → Notified (yield)', COLORS.poll2],
      ['pending (waiting for a wake)', COLORS.pending], ['runnable (waiting for a worker)', COLORS.runnable],
      ['wake', COLORS.wake]].forEach(function (l) {
      var s = el('span'), sw = el('span', 'swatch');
      sw.style.background = l[1];
      s.appendChild(sw); s.appendChild(document.createTextNode(l[0]));
      legend.appendChild(s);
    });
    var note = [];
    if (T.total > T.kept) note.push('The timeline kept the last ' + num(T.kept) + ' of ' + num(T.total) + ' events (--timeline-events): it starts at +' + dur(T.from_ns) + '.');
    note.push(tasks.length + ' of ' + num(T.tasks_in_window || 0) + ' tasks seen in the timeline are shown.');
    if (F) note.push('The dashed red line marks the flight-recorder trigger (' + F.spec + ' at +' + dur(F.at_ns) + ')' +
      (F.task !== null ? '; the highlighted row is its ' + taskName(F.task) + '.' : '.'));
    tasks.forEach(function (t) { if (t.kept < t.events) note.push(taskName(t.id) + ': the last ' + num(t.kept) + ' of ' + num(t.events) + ' polls and wakes.'); });
    $('tl-note').textContent = note.join(' ');
    var canvas = $('tl-canvas'), wrap = $('tl-wrap');
    if (!tasks.length) {
      wrap.replaceWith(el('p', 'empty', 'No polls in the timeline.'));
      return;
    }
    var ROW = 22, TOP = 26, LABEL = 280;
    /* a poll may have begun before the window (a task polled when the capture started) */
    var first = T.from_ns;
    tasks.forEach(function (t) { if (t.polls.length && t.polls[0].b < first) first = t.polls[0].b; });
    var v0 = first, v1 = Math.max(T.to_ns, first + 1000);
    if (F) { v0 = Math.min(v0, F.at_ns); v1 = Math.max(v1, F.at_ns); }
    var full0 = v0, full1 = v1;
    /* the trigger's moment: a line over the canvas (it lets the mouse through), moved by draw() */
    var mark = null;
    if (F) {
      mark = el('div', 'tl-trigger');
      mark.appendChild(el('span', 'tl-trigger-label', F.kind || 'trigger'));
      mark.setAttribute('data-at-ns', String(F.at_ns));
      wrap.appendChild(mark);
    }
    var ctx = canvas.getContext('2d');
    var width = 0;
    function resize() {
      width = Math.max(600, wrap.clientWidth);
      var h = TOP + tasks.length * ROW + 4, dpr = window.devicePixelRatio || 1;
      canvas.width = Math.round(width * dpr); canvas.height = Math.round(h * dpr);
      canvas.style.width = width + 'px'; canvas.style.height = h + 'px';
      if (mark) mark.style.height = h + 'px';
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      draw();
    }
    function X(t) { return LABEL + (t - v0) / (v1 - v0) * (width - LABEL - 8); }
    function Tm(x) { return v0 + (x - LABEL) / (width - LABEL - 8) * (v1 - v0); }
    function firstEnding(arr, t, endOf) { /* first index whose end >= t (arr sorted by start) */
      var lo = 0, hi = arr.length;
      while (lo < hi) { var m = (lo + hi) >> 1; if (endOf(arr[m]) < t) lo = m + 1; else hi = m; }
      return Math.max(0, lo - 1);
    }
    function niceStep(span) {
      var raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
      var n = raw / p;
      return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * p;
    }
    function draw() {
      var H = TOP + tasks.length * ROW + 4;
      ctx.clearRect(0, 0, width, H);
      ctx.font = '11px system-ui, "DejaVu Sans", sans-serif';
      /* axis */
      var step = niceStep(v1 - v0);
      ctx.fillStyle = '#5f6b7a'; ctx.strokeStyle = '#e3e7ee'; ctx.textAlign = 'center';
      for (var g = Math.ceil(v0 / step) * step; g <= v1; g += step) {
        var gx = X(g);
        ctx.beginPath(); ctx.moveTo(gx, TOP - 4); ctx.lineTo(gx, H); ctx.stroke();
        ctx.fillText('+' + dur(g), gx, TOP - 9);
      }
      ctx.textAlign = 'left';
      tasks.forEach(function (t, i) {
        var y = TOP + i * ROW;
        if (isTriggerTask(t.pid, t.id)) { ctx.fillStyle = '#fdecea'; ctx.fillRect(0, y, width, ROW); }
        else if (i % 2) { ctx.fillStyle = '#f6f8fb'; ctx.fillRect(0, y, width, ROW); }
        ctx.fillStyle = '#1d2330';
        /* the end of a location (file name, line) says more than its start */
        /* a future type (uprobe fallback): its generic tail ({async_fn_env#0}, {{closure}}) says little */
        var head = taskName(t.id) + '  ', loc = siteName(t.site).replace(/(::\{[^{}]*\}|::\{\{closure\}\})+$/, ''), cut = false;
        while (loc.length > 1 && ctx.measureText(head + (cut ? '…' : '') + loc).width > LABEL - 10) { loc = loc.slice(2); cut = true; }
        ctx.fillText(head + (cut ? '…' : '') + loc, 6, y + 15);
        ctx.save();
        ctx.beginPath(); ctx.rect(LABEL, y, width - LABEL, ROW); ctx.clip();
        var mid = y + ROW / 2;
        [[t.pend, COLORS.pending, 2], [t.runnable, COLORS.runnable, 3]].forEach(function (L) {
          ctx.fillStyle = L[1];
          var arr = L[0];
          for (var k = firstEnding(arr, v0, function (a) { return a[1]; }); k < arr.length && arr[k][0] <= v1; k++) {
            var a = X(arr[k][0]), b = X(arr[k][1]);
            if (b < LABEL) continue;
            ctx.fillRect(a, mid - L[2] / 2, Math.max(1, b - a), L[2]);
          }
        });
        var lastX = -1, lastR = -1;
        for (var k = firstEnding(t.polls, v0, function (p) { return p.b + p.d; }); k < t.polls.length && t.polls[k].b <= v1; k++) {
          var p = t.polls[k], a = X(p.b), w = Math.max(1, X(p.b + p.d) - a);
          if (w <= 1 && Math.floor(a) === lastX && p.r === lastR) continue;
          lastX = Math.floor(a); lastR = p.r;
          ctx.fillStyle = COLORS['poll' + (p.r < 5 ? p.r : 3)];
          ctx.fillRect(a, y + 6, w, ROW - 10);
        }
        ctx.fillStyle = COLORS.wake;
        var lastW = -1;
        for (var q = 0; q < t.wakes.length; q++) {
          var wt = t.wakes[q].t;
          if (wt < v0 || wt > v1) continue;
          var wx = Math.floor(X(wt));
          if (wx === lastW) continue;
          lastW = wx;
          ctx.beginPath(); ctx.moveTo(wx - 3, y); ctx.lineTo(wx + 4, y); ctx.lineTo(wx + 0.5, y + 5); ctx.fill();
        }
        ctx.restore();
      });
      $('tl-range').textContent = 'showing +' + dur(v0) + ' … +' + dur(v1) + ' (' + dur(v1 - v0) + ')';
      if (mark) {
        var mx = X(F.at_ns);
        mark.hidden = mx < LABEL || mx > width - 8;
        mark.style.left = Math.round(mx) + 'px';
        mark.classList.toggle('tl-trigger-left', mx > width - 140); /* the label inside the canvas */
      }
    }
    function zoom(f, cx) {
      var c = cx === undefined ? (v0 + v1) / 2 : Tm(cx);
      var n0 = c - (c - v0) * f, n1 = c + (v1 - c) * f;
      if (n1 - n0 < 1000) return;
      if (n1 - n0 > full1 - full0) { n0 = full0; n1 = full1; }
      v0 = n0; v1 = n1; draw();
    }
    $('tl-in').addEventListener('click', function () { zoom(0.5); });
    $('tl-out').addEventListener('click', function () { zoom(2); });
    $('tl-fit').addEventListener('click', function () { v0 = full0; v1 = full1; draw(); });
    canvas.addEventListener('wheel', function (ev) {
      if (!ev.ctrlKey && !ev.shiftKey && Math.abs(ev.deltaY) < Math.abs(ev.deltaX)) return;
      var r = canvas.getBoundingClientRect();
      if (ev.clientX - r.left < LABEL) return;
      ev.preventDefault();
      zoom(ev.deltaY > 0 ? 1.25 : 0.8, ev.clientX - r.left);
    }, { passive: false });
    var drag = null;
    canvas.addEventListener('mousedown', function (ev) { drag = { x: ev.clientX, v0: v0, v1: v1 }; wrap.classList.add('dragging'); });
    window.addEventListener('mouseup', function () { drag = null; wrap.classList.remove('dragging'); });
    window.addEventListener('mousemove', function (ev) {
      if (!drag) return;
      var dt = (ev.clientX - drag.x) / (width - LABEL - 8) * (drag.v1 - drag.v0);
      v0 = drag.v0 - dt; v1 = drag.v1 - dt; draw();
    });
    canvas.addEventListener('mousemove', function (ev) {
      if (drag) return;
      var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
      var i = Math.floor((y - TOP) / ROW);
      if (i < 0 || i >= tasks.length) { hideTip(); return; }
      var t = tasks[i], tm = Tm(x), slack = (v1 - v0) / (width - LABEL) * 3, text = null;
      if (x < LABEL) {
        var s = sitesById[t.site];
        text = taskName(t.id) + ' (PID ' + t.pid + ')\n' + siteName(t.site) + (s && s.type ? '\n' + s.type : '') +
          '\n' + num(t.polls.length) + ' polls, ' + num(t.wakes.length) + ' wakes in the timeline';
      } else {
        if (F && Math.abs(X(F.at_ns) - x) <= 3)
          text = 'flight-recorder trigger: ' + F.spec + ' at +' + dur(F.at_ns) + (F.detail ? '\n' + F.detail : '');
        for (var q = 0; q < t.wakes.length && !text; q++) {
          var w = t.wakes[q];
          if (Math.abs(w.t - tm) <= slack)
            text = 'wake at +' + dur(w.t) + (w.ref ? ' (by reference)' : '') + '\n' +
              (w.src === 1 ? 'woke itself during its poll' : w.src === 2 ? 'from a thread outside the runtime' : 'from worker ' + w.ww);
        }
        for (var k = firstEnding(t.polls, tm - slack, function (p) { return p.b + p.d; }); k < t.polls.length && !text && t.polls[k].b <= tm + slack; k++) {
          var p = t.polls[k];
          if (tm >= p.b - slack && tm <= p.b + p.d + slack)
            text = 'poll at +' + dur(p.b) + ' for ' + dur(p.d) + ' → ' + (RESULT[p.r] || '?') + '\n' +
              (p.w >= 0 ? 'on worker ' + p.w : 'off the workers (blocking pool)');
        }
        [[t.pend, 'pending (no wake yet)'], [t.runnable, 'runnable, waiting for a worker']].forEach(function (L) {
          for (var k2 = 0; k2 < L[0].length && !text; k2++)
            if (tm >= L[0][k2][0] && tm <= L[0][k2][1]) text = L[1] + ' for ' + dur(L[0][k2][1] - L[0][k2][0]) + '\nfrom +' + dur(L[0][k2][0]);
        });
      }
      if (text) showTip(ev, text); else hideTip();
    });
    canvas.addEventListener('mouseleave', hideTip);
    window.addEventListener('resize', resize);
    resize();
  }

  /* ---- heat map ---- */
  function heatmap() {
    var Hm = D.heat || { rows: [] }, rows = Hm.rows || [];
    var canvas = $('hm-canvas'), wrap = $('hm-wrap');
    if (!rows.length) { wrap.replaceWith(el('p', 'empty', 'No worker activity recorded (worker_park/unpark and polls on workers).')); }
    else {
      var ROW = 20, LABEL = 130, TOP = 6, AX = 22, ctx = canvas.getContext('2d'), width = 0;
      var bins = Hm.bins, span = Math.max(1, Hm.to_ns - Hm.from_ns);
      var draw = function () {
        width = Math.max(600, wrap.clientWidth);
        var h = TOP + rows.length * ROW + AX, dpr = window.devicePixelRatio || 1;
        canvas.width = Math.round(width * dpr); canvas.height = Math.round(h * dpr);
        canvas.style.width = width + 'px'; canvas.style.height = h + 'px';
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        ctx.clearRect(0, 0, width, h);
        ctx.font = '11px system-ui, "DejaVu Sans", sans-serif';
        var cw = (width - LABEL - 8) / bins;
        rows.forEach(function (r, i) {
          var y = TOP + i * ROW;
          ctx.fillStyle = '#1d2330';
          ctx.fillText('worker ' + r.worker + (rows.some(function (o) { return o.pid !== r.pid; }) ? ' · ' + r.pid : ''), 6, y + 14);
          for (var b = 0; b < bins; b++) {
            var bu = r.busy[b] / 1000, pk = r.parked[b] / 1000, wh = Math.max(0, 1 - bu - pk);
            var c = [0, 1, 2].map(function (k) { return Math.round(255 * wh + COLORS.busy[k] * bu + COLORS.parked[k] * pk); });
            ctx.fillStyle = 'rgb(' + c.join(',') + ')';
            ctx.fillRect(LABEL + b * cw, y + 1, Math.ceil(cw), ROW - 2);
          }
        });
        var ay = TOP + rows.length * ROW;
        ctx.fillStyle = '#5f6b7a'; ctx.textAlign = 'center';
        for (var k = 0; k <= 4; k++) {
          var t = Hm.from_ns + span * k / 4, x = LABEL + (width - LABEL - 8) * k / 4;
          ctx.fillRect(x, ay, 1, 4);
          ctx.fillText('+' + dur(t), Math.min(Math.max(x, LABEL + 20), width - 30), ay + 16);
        }
        ctx.textAlign = 'left';
      };
      canvas.addEventListener('mousemove', function (ev) {
        var r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
        var i = Math.floor((y - TOP) / ROW), b = Math.floor((x - LABEL) / ((width - LABEL - 8) / bins));
        if (i < 0 || i >= rows.length || b < 0 || b >= bins) { hideTip(); return; }
        var t0 = Hm.from_ns + span * b / bins, t1 = Hm.from_ns + span * (b + 1) / bins;
        showTip(ev, 'worker ' + rows[i].worker + ' (tid ' + rows[i].tid + '), +' + dur(t0) + ' … +' + dur(t1) + '\n' +
          (rows[i].busy[b] / 10).toFixed(1) + '% in polls, ' + (rows[i].parked[b] / 10).toFixed(1) + '% parked');
      });
      canvas.addEventListener('mouseleave', hideTip);
      window.addEventListener('resize', draw);
      draw();
    }
    var ws = D.workers || [], span2 = D.capture.duration_ns || 1;
    if (ws.length) {
      table($('hm-workers'), [
        { label: 'Worker', get: function (w) { return w.worker; }, num: true },
        { label: 'PID', get: function (w) { return w.pid; }, num: true },
        { label: 'Thread', get: function (w) { return w.tid; }, num: true },
        { label: 'Polls', get: function (w) { return w.polls; }, num: true, fmt: num },
        { label: 'Busy', get: function (w) { return w.busy_ns; }, num: true, fmt: dur },
        { label: 'Busy %', get: function (w) { return w.busy_ns / span2; }, num: true, fmt: pct },
        { label: 'Parked', get: function (w) { return w.parked_ns; }, num: true, fmt: dur },
        { label: 'Parks', get: function (w) { return w.parks; }, num: true, fmt: num }
      ], ws, { sort: 0, asc: true, limit: 100 });
    }
  }

  /* ---- sortable tables ---- */
  function table(container, cols, rows, opt) {
    var sortCol = opt.sort, asc = !!opt.asc, limit = opt.limit || 500, showAll = false;
    var wrap = el('div', 'table-wrap'), tbl = el('table'), thead = el('thead'), tbody = el('tbody');
    var more = el('p', 'muted');
    var hr = el('tr');
    var chosen = false;
    cols.forEach(function (c, i) {
      var th = el('th', (c.num ? '' : 'text') + (c.cls ? ' ' + c.cls : ''), c.label);
      if (c.title) th.title = c.title;
      th.addEventListener('click', function () {
        if (sortCol === i) asc = !asc; else { sortCol = i; asc = !c.num; }
        chosen = true;
        render();
      });
      hr.appendChild(th);
    });
    thead.appendChild(hr); tbl.appendChild(thead); tbl.appendChild(tbody); wrap.appendChild(tbl);
    container.appendChild(wrap); container.appendChild(more);
    function key(r, c) { var v = c.get(r); return v === null || v === undefined ? (c.num ? -Infinity : '') : v; }
    function render() {
      var c = cols[sortCol];
      var sorted = rows.slice().sort(function (a, b) {
        /* the default order keeps opt.last rows (the runtime's own sites) at the end; a
         * column the reader sorts by sorts them all */
        if (!chosen && opt.last && !opt.last(a) !== !opt.last(b)) return opt.last(a) ? 1 : -1;
        var x = key(a, c), y = key(b, c);
        var d = c.num ? (x < y ? -1 : x > y ? 1 : 0) : String(x).localeCompare(String(y));
        return asc ? d : -d;
      });
      Array.prototype.forEach.call(hr.children, function (th, i) {
        th.classList.toggle('sorted-asc', i === sortCol && asc);
        th.classList.toggle('sorted-desc', i === sortCol && !asc);
      });
      tbody.textContent = '';
      var n = showAll ? sorted.length : Math.min(limit, sorted.length);
      var frag = document.createDocumentFragment();
      for (var i = 0; i < n; i++) {
        var r = sorted[i], tr = el('tr', opt.rowClass ? opt.rowClass(r) : '');
        cols.forEach(function (c) {
          var v = c.get(r);
          tr.appendChild(el('td', (c.num ? '' : 'text') + (c.cls ? ' ' + c.cls : ''), c.fmt ? c.fmt(v, r) : v === null || v === undefined ? '–' : v));
        });
        frag.appendChild(tr);
      }
      tbody.appendChild(frag);
      more.textContent = '';
      if (n < sorted.length) {
        more.appendChild(document.createTextNode('Showing ' + num(n) + ' of ' + num(sorted.length) + ' rows. '));
        var b = el('button', '', 'Show all');
        b.type = 'button';
        b.addEventListener('click', function () { showAll = true; render(); });
        more.appendChild(b);
      }
      if (opt.note) more.appendChild(document.createTextNode(' ' + opt.note));
    }
    render();
  }

  function kindsOf(bits) {
    var k = [];
    for (var i = 0; i < KIND.length; i++) if (bits & (1 << i)) k.push(KIND[i]);
    return k.join(', ');
  }

  function stalled() {
    var rows = (D.findings || []).filter(function (f) { return f.kind === 'stalled' || f.kind === 'lost_waker'; });
    var c = $('stalled-table');
    if (!rows.length) { c.appendChild(el('p', 'empty', 'No stalled task and no lost waker.')); return; }
    table(c, [
      { label: 'Kind', get: function (f) { return f.kind; }, cls: 'nowrap' },
      { label: 'Task', get: function (f) { return f.task; }, num: true, fmt: taskId },
      { label: 'Spawn site', get: function (f) { return f.loc; }, cls: 'loc' },
      { label: 'Type', get: function (f) { return f.type; }, cls: 'type' },
      { label: 'Pending for', get: function (f) { return f.value_ns; }, num: true, fmt: dur },
      { label: 'Live wakers', get: function (f) { return f.live_wakers; }, num: true,
        fmt: function (v) { return v === null ? 'unknown' : v; } },
      { label: 'Still pending', get: function (f) { return f.ongoing ? 'yes' : f.contradicted ? 'no (woken later)' : 'no'; } },
      { label: 'Since', get: function (f) { return f.first_at_ns; }, num: true, fmt: function (v) { return '+' + dur(v); } }
    ], rows, { sort: 4, asc: false, limit: 200, rowClass: function (f) { return f.trigger ? 'trigger' : ''; } });
  }

  function sites() {
    var rows = D.sites || [];
    var c = $('sites-table');
    if (!rows.length) { c.appendChild(el('p', 'empty', 'No spawn site seen.')); return; }
    var nf = function (s) { return s.findings.reduce(function (a, b) { return a + b; }, 0); };
    table(c, [
      { label: 'Spawn site', get: function (s) { return s.loc; }, cls: 'loc',
        fmt: function (v, s) { return s.runtime ? v + ' (Tokio runtime)' : v; } },
      { label: 'Type', get: function (s) { return s.type; }, cls: 'type' },
      { label: 'Kind', get: function (s) { return s.kind; }, cls: 'nowrap' },
      { label: 'Tasks', get: function (s) { return s.tasks; }, num: true, fmt: num },
      { label: 'Live', get: function (s) { return s.live; }, num: true, fmt: num },
      { label: 'Polls', get: function (s) { return s.polls; }, num: true, fmt: num },
      { label: 'Busy', get: function (s) { return s.busy_ns; }, num: true, fmt: dur },
      { label: 'Pending ratio', get: function (s) { return pendingRatio(s.busy_ns, s.sched.sum, (s.pending.sum || 0) + (s.pending_now_ns || 0)); }, num: true, fmt: pct,
        title: 'waiting for a wake ÷ (polled + runnable + waiting for a wake)' },
      { label: 'Poll p99', get: function (s) { return s.poll.p99; }, num: true, fmt: dur },
      { label: 'Sched p99', get: function (s) { return s.sched.p99; }, num: true, fmt: dur },
      { label: 'Pending p99', get: function (s) { return s.pending.p99; }, num: true, fmt: dur },
      { label: 'Wakes', get: function (s) { return s.wakes; }, num: true, fmt: num },
      { label: 'Findings', get: nf, num: true, cls: 'nowrap', fmt: function (v, s) {
        return v ? KIND.filter(function (k, i) { return s.findings[i]; }).map(function (k) { return k + ' ' + s.findings[KIND.indexOf(k)]; }).join(', ') : '';
      } }
    ], rows, { sort: 6, asc: false, limit: 300, rowClass: function (s) { return nf(s) ? 'has-finding' : ''; },
      last: function (s) { return s.runtime; },
      note: D.sites_total > rows.length ? '(' + num(D.sites_total - rows.length) + ' more sites in the JSON report)' : '' });
  }

  function tasksTable() {
    var cols = D.task_cols || [], rows = D.tasks || [], c = $('tasks-table');
    if (!rows.length) { c.appendChild(el('p', 'empty', 'No task seen.')); return; }
    var ix = {}; cols.forEach(function (n, i) { ix[n] = i; });
    var g = function (n) { return function (r) { return r[ix[n]]; }; };
    table(c, [
      { label: 'Task', get: g('id'), num: true, fmt: taskId },
      { label: 'Name', get: function (r) { return r[ix.name] === null || r[ix.name] === undefined ? '' : r[ix.name]; } },
      { label: 'Spawn site', get: function (r) { return siteName(r[ix.site]); }, cls: 'loc' },
      { label: 'State', get: g('state'), cls: 'nowrap' },
      { label: 'Waits for', get: function (r) { return r[ix.waits_for] || ''; },
        title: 'pending tasks: what the last poll registered with a Tokio timer, I/O resource, sync primitive or JoinHandle' },
      { label: 'Future', get: function (r) { return r[ix.future_size]; }, num: true,
        fmt: function (v) { return v === null || v === undefined ? '' : num(v) + ' B'; }, title: 'size of the future at spawn' },
      { label: 'Polls', get: g('polls'), num: true, fmt: num },
      { label: 'Busy', get: g('busy_ns'), num: true, fmt: dur },
      { label: 'Pending ratio', get: function (r) { return pendingRatio(r[ix.busy_ns], r[ix.sched_ns], r[ix.pending_ns]); }, num: true, fmt: pct,
        title: 'waiting for a wake ÷ (polled + runnable + waiting for a wake)' },
      { label: 'Sched p99', get: g('sched_p99_ns'), num: true, fmt: dur },
      { label: 'Poll p99', get: g('poll_p99_ns'), num: true, fmt: dur },
      { label: 'Wakes', get: g('wakes'), num: true, fmt: num },
      { label: 'Lifetime', get: g('lifetime_ns'), num: true, fmt: dur },
      { label: 'Live wakers', get: g('live_wakers'), num: true, fmt: function (v) { return v === null ? 'unknown' : v; } },
      { label: 'Findings', get: function (r) { return kindsOf(r[ix.findings]); }, cls: 'nowrap' }
    ], rows, { sort: 7, asc: false, limit: 500, rowClass: function (r) {
        return (r[ix.findings] ? 'has-finding' : '') + (isTriggerTask(r[ix.pid], r[ix.id]) ? ' trigger' : '');
      },
      note: D.tasks_total > rows.length ? '(the ' + num(rows.length) + ' busiest of ' + num(D.tasks_total) + ' tasks, and every task with a finding; all in the JSON report)' : '' });
  }

  /* ---- where the time went (D.why: CPU samples and blocked stacks inside polls) ---- */
  /* A frame's kind, from its display string (tracer/analyze/why.h), first rule that matches:
   * "[kernel] …" is the kernel; "module+0xoff" or "[unknown]" was not symbolized; a file under
   * /rustc/, a …/registry/ or .cargo/git/ checkout, a std/core/alloc/tokio path (also inside
   * "<…>") or a name without "::" (C: libc, the allocator) is a library; any other Rust path is
   * the program's own code. */
  var FRAME_KINDS = [['own', 'program code'], ['lib', 'libraries (std, Tokio, crates, libc)'],
    ['kernel', 'kernel'], ['addr', 'not symbolized']];
  function frameKind(f) {
    if (f.lastIndexOf('[kernel]', 0) === 0) return 'kernel';
    if (f === '[unknown]' || /^\S+\+0x[0-9a-f]+$/i.test(f)) return 'addr';
    var m = / \(([^()]*)\)$/.exec(f), fn = m ? f.slice(0, m.index) : f, file = m ? m[1] : '';
    if (/(^|\/)(rustc|registry|\.cargo\/git)\//.test(file)) return 'lib';
    if (/^[<&*\s]*((mut|dyn|const)\s+)*(std|core|alloc|tokio)::/.test(fn) || fn.indexOf('::') < 0) return 'lib';
    return 'own';
  }
  /* stacks: [[samples, [frame index, … root first]]]; other: samples of the stacks not listed */
  function flameTree(stacks, frames, other) {
    var root = { name: 'all', n: 0, kids: [], by: {}, parent: null };
    stacks.forEach(function (s) {
      var node = root;
      root.n += s[0];
      s[1].forEach(function (fi) {
        var k = node.by[fi];
        if (!k) {
          k = { name: frames[fi] === undefined || frames[fi] === null ? '?' : String(frames[fi]), n: 0, kids: [], by: {}, parent: node };
          node.by[fi] = k;
          node.kids.push(k);
        }
        k.n += s[0];
        node = k;
      });
    });
    if (other > 0) {
      root.n += other;
      root.kids.push({ name: '(smaller stacks, not listed)', n: other, kids: [], by: {}, parent: root, other: true });
    }
    (function sort(n) { n.kids.sort(function (a, b) { return b.n - a.n; }); n.kids.forEach(sort); })(root);
    return root;
  }
  /* an icicle: the root on top, children below, widths relative to the zoomed frame (view);
   * its ancestors stay above it, full width, to click back out */
  var FG_ROW = 18, FG_MIN = 0.001;
  function flameGraph(root) {
    var wrap = el('div', 'fg-wrap'), bar = el('div', 'controls'), box = el('div', 'fg');
    var reset = el('button', '', 'Zoom out'), info = el('span', 'fg-info muted', 'Hover a block for its samples; click to zoom in.');
    var nodes = [], view = root;
    reset.type = 'button';
    bar.appendChild(reset); bar.appendChild(info);
    wrap.appendChild(bar); wrap.appendChild(box);
    function block(n, depth, x, w, ancestor) {
      var kind = n === root || n.other ? 'all' : frameKind(n.name);
      var b = el('div', 'fg-b fg-' + kind + (ancestor ? ' fg-anc' : ''), n === root ? 'all (' + num(root.n) + ' samples)' : n.name);
      b.style.left = (x * 100) + '%';
      b.style.width = (w * 100) + '%';
      b.style.top = (depth * FG_ROW) + 'px';
      b.setAttribute('data-i', String(nodes.length));
      nodes.push(n);
      box.appendChild(b);
    }
    function lay(n, x, depth) {
      var deepest = depth;
      n.kids.forEach(function (k) {
        var w = k.n / view.n;
        if (w >= FG_MIN) {
          block(k, depth + 1, x, w, false);
          deepest = Math.max(deepest, lay(k, x, depth + 1));
        }
        x += w;
      });
      return deepest;
    }
    function draw() {
      var path = [];
      for (var p = view; p; p = p.parent) path.unshift(p);
      box.textContent = '';
      nodes = [];
      path.forEach(function (a, i) { block(a, i, 0, 1, a !== view); });
      box.style.height = ((lay(view, 0, path.length - 1) + 1) * FG_ROW + 2) + 'px';
      reset.disabled = view === root;
    }
    function nodeAt(ev) {
      var b = ev.target && ev.target.closest ? ev.target.closest('.fg-b') : null;
      return b && box.contains(b) ? nodes[Number(b.getAttribute('data-i'))] : null;
    }
    function describe(n) {
      return (n === root ? 'all samples' : n.name) + '\n' + num(n.n) + (n.n === 1 ? ' sample' : ' samples') +
        ' · ' + pct(n.n / root.n) + ' of the site' + (view !== root ? ' · ' + pct(n.n / view.n) + ' of the zoomed frame' : '');
    }
    box.addEventListener('mousemove', function (ev) {
      var n = nodeAt(ev);
      if (!n) { hideTip(); return; }
      info.textContent = describe(n).replace('\n', ' — ');
      showTip(ev, describe(n));
    });
    box.addEventListener('mouseleave', hideTip);
    box.addEventListener('click', function (ev) {
      var n = nodeAt(ev);
      if (!n) return;
      view = n === view && n.parent ? n.parent : n;
      draw();
    });
    reset.addEventListener('click', function () { view = root; draw(); });
    draw();
    return wrap;
  }
  function whySplit(s) {
    var parts = [['on CPU', s.on_cpu_ns, 'oncpu'], ['preempted', s.preempted_ns, 'preempted'], ['blocked', s.blocked_ns, 'blocked']];
    var total = parts.reduce(function (a, p) { return a + (p[1] || 0); }, 0);
    var box = el('div', 'why-split-wrap'), line = el('div', 'why-figs');
    parts.forEach(function (p, i) {
      var sw = el('span', 'swatch seg-' + p[2]);
      if (i) line.appendChild(document.createTextNode(' · '));
      line.appendChild(sw);
      line.appendChild(document.createTextNode(p[0] + ' ' + dur(p[1] || 0) + (total ? ' (' + pct((p[1] || 0) / total) + ')' : '')));
      if (p[2] === 'preempted' && s.stolen_ns)
        line.appendChild(document.createTextNode(', ' + dur(s.stolen_ns) + ' of it by the hypervisor'));
    });
    box.appendChild(line);
    if (total) {
      var bar = el('div', 'why-split');
      parts.forEach(function (p) {
        var seg = el('div', 'seg-' + p[2]);
        seg.style.width = ((p[1] || 0) / total * 100) + '%';
        bar.appendChild(seg);
      });
      box.appendChild(bar);
    }
    return box;
  }
  function whySiteBody(d, s, W) {
    var frames = W.frames || [];
    d.appendChild(whySplit(s));
    if ((s.cpu || []).length) {
      d.appendChild(el('h3', '', 'CPU samples in its polls: ' + num(s.samples) + (W.profile_hz ? ' (at ' + W.profile_hz + ' Hz)' : '')));
      if (s.cpu_stacks > s.cpu.length)
        d.appendChild(el('p', 'muted', 'The ' + num(s.cpu.length) + ' biggest of ' + num(s.cpu_stacks) + ' stacks; the others together under “(smaller stacks, not listed)” (--stacks FILE writes them all).'));
      d.appendChild(flameGraph(flameTree(s.cpu, frames, s.cpu_other || 0)));
    } else {
      d.appendChild(el('p', 'empty', s.samples ? num(s.samples) + ' CPU samples in the polls of this site, their stacks not kept in this page (--stacks FILE writes them all).' :
        'No CPU samples in the polls of this site.'));
    }
    if (!(s.blocked || []).length) return;
    d.appendChild(el('h3', '', 'Blocked off the CPU inside its polls'));
    var c = el('div', 'why-blocked');
    d.appendChild(c);
    table(c, [
      { label: 'Syscall', get: function (b) { return b.syscall; }, cls: 'nowrap' },
      { label: 'Time', get: function (b) { return b.ns; }, num: true, fmt: dur },
      { label: 'Periods', get: function (b) { return b.count; }, num: true, fmt: num },
      { label: 'Where (innermost first)', get: function (b) {
        return b.frames.map(function (fi) { return frames[fi] === undefined ? '?' : String(frames[fi]); }).join(' ← ');
      }, cls: 'loc' }
    ], s.blocked, { sort: 1, asc: false, limit: 50,
      note: s.blocked_stacks > s.blocked.length ? '(the ' + s.blocked.length + ' longest of ' + num(s.blocked_stacks) + ' blocked stacks)' : '' });
  }
  function whySite(s, W, open) {
    var d = el('details', 'why-site'), sum = el('summary'), filled = false;
    sum.appendChild(el('code', '', s.loc));
    if (s.type) sum.appendChild(el('span', 'muted', '  ' + s.type));
    sum.appendChild(el('span', 'why-sum', ' — ' + num(s.samples) + ' CPU samples, blocked ' + dur(s.blocked_ns || 0)));
    d.appendChild(sum);
    /* drawn when first opened */
    function fill() { if (!filled) { filled = true; whySiteBody(d, s, W); } }
    d.addEventListener('toggle', function () { if (d.open) fill(); });
    if (open) { d.open = true; fill(); }
    return d;
  }
  function whyHead(W) {
    var head = $('why-head'), notes = [];
    if (W.profile_hz)
      head.appendChild(el('p', '', num(W.cpu_samples) + ' CPU samples at ' + W.profile_hz + ' Hz, ' + num(W.cpu_samples_in_polls) +
        ' of them inside polls (charged to the task being polled); ' + num(W.offcpu_periods_in_polls) + ' off-CPU periods inside polls.'));
    if (W.why_no_profile) notes.push('No CPU profile: ' + W.why_no_profile);
    if (!W.sched && W.why_no_sched) notes.push('No scheduler tracepoints (no blocked stacks, no preempted time): ' + W.why_no_sched);
    (W.notes || []).forEach(function (n) { notes.push(n); });
    if (W.stack_errors) notes.push(num(W.stack_errors) + ' stacks could not be recorded (the stack map was full); their samples are not shown.');
    if (notes.length) {
      var ul = el('ul', 'warning why-notes');
      notes.forEach(function (n) { ul.appendChild(el('li', '', n)); });
      head.appendChild(ul);
    }
    if (W.sites_total > (W.sites || []).length)
      head.appendChild(el('p', 'muted', 'The ' + W.sites.length + ' busiest of ' + num(W.sites_total) + ' spawn sites with samples or blocked time.'));
  }
  function whyTime() {
    var W = D.why, sec = $('why');
    var sites = W ? (W.sites || []).filter(function (s) { return s.samples > 0 || (s.cpu || []).length || (s.blocked || []).length; }) : [];
    if (!W || (!sites.length && !(W.notes || []).length && !W.why_no_sched && !W.why_no_profile)) {
      sec.remove();
      $('nav-why').remove();
      return;
    }
    sec.hidden = false;
    $('nav-why').hidden = false;
    var legend = $('why-legend');
    FRAME_KINDS.forEach(function (k, i) {
      legend.appendChild(el('span', 'swatch fg-' + k[0]));
      legend.appendChild(document.createTextNode(k[1] + (i + 1 < FRAME_KINDS.length ? ', ' : '')));
    });
    whyHead(W);
    var box = $('why-sites');
    if (!sites.length) box.appendChild(el('p', 'empty', 'No CPU samples or blocked time inside polls.'));
    sites.forEach(function (s, i) { box.appendChild(whySite(s, W, i < 3)); });
  }

  /* ---- io_uring (D.io_uring: null when the target used none: no section then) ---- */
  function uring() {
    var U = D.io_uring, sec = $('io_uring');
    if (!U) { sec.remove(); $('nav-uring').remove(); return; }
    sec.hidden = false;
    $('nav-uring').hidden = false;
    var head = $('uring-head');
    head.appendChild(el('p', 'uring-totals', num(U.rings) + (U.rings === 1 ? ' ring' : ' rings') + ' · ' +
      num(U.submitted) + ' requests submitted · ' + num(U.completed) + ' completed (' + num(U.errors) +
      ' errors) · ' + num(U.in_flight) + ' in flight at the end · ' + num(U.linked) + ' linked to a task, ' +
      num(U.unattributed) + ' not · ' + num(U.consumed) + ' completions consumed by a poll of their task, ' +
      num(U.unconsumed) + ' not'));
    if (U.why_not_linked) head.appendChild(el('p', 'warning', 'Not linked to tasks: ' + U.why_not_linked));
    if (U.records_lost) head.appendChild(el('p', 'warning', num(U.records_lost) +
      ' io_uring records were lost (the ring buffer was full): these figures are incomplete.'));
    var lat = function (k, q) { return function (o) { return o[k].n ? o[k][q] : null; }; };
    var opCols = [
      { label: 'Submitted', get: function (o) { return o.submitted; }, num: true, fmt: num },
      { label: 'Completed', get: function (o) { return o.completed; }, num: true, fmt: num },
      { label: 'Errors', get: function (o) { return o.errors; }, num: true, fmt: num },
      { label: 'In flight', get: function (o) { return o.in_flight; }, num: true, fmt: num,
        title: 'still in flight at the end of the capture' },
      { label: 'Latency p50', get: lat('lat', 'p50'), num: true, fmt: dur, title: 'submission → completion' },
      { label: 'p99', get: lat('lat', 'p99'), num: true, fmt: dur },
      { label: 'max', get: lat('lat', 'max'), num: true, fmt: dur },
      { label: 'Complete → poll p50', get: lat('to_poll', 'p50'), num: true, fmt: dur,
        title: 'completion → the next poll of the task that submitted it' },
      { label: 'p99', get: lat('to_poll', 'p99'), num: true, fmt: dur }
    ];
    table($('uring-ops'), [{ label: 'Op', get: function (o) { return o.op; }, cls: 'nowrap' }].concat(opCols),
      U.ops || [], { sort: 1, asc: false });
    var rows = [];
    (U.sites || []).forEach(function (s) {
      (s.ops || []).forEach(function (o) { rows.push({ s: s, o: o }); });
    });
    var via = function (c) {
      return { label: c.label, num: c.num, fmt: c.fmt, title: c.title, get: function (r) { return c.get(r.o); } };
    };
    if (!rows.length) $('uring-sites').appendChild(el('p', 'empty', 'No request finished or in flight at a spawn site.'));
    else table($('uring-sites'), [
      { label: 'Spawn site', get: function (r) { return r.s.loc; }, cls: 'loc' },
      { label: 'Type', get: function (r) { return r.s.type; }, cls: 'type' },
      { label: 'Tasks', get: function (r) { return r.s.tasks; }, num: true, fmt: num },
      { label: 'Op', get: function (r) { return r.o.op; }, cls: 'nowrap' }
    ].concat(opCols.slice(0, 6).map(via), [via(opCols[7])]), rows, { sort: 4, asc: false });
    var inf = U.in_flight_requests || [], ic = $('uring-inflight');
    if (!inf.length) ic.appendChild(el('p', 'empty', 'No request was in flight at the end.'));
    else table(ic, [
      { label: 'Op', get: function (f) { return f.op; }, cls: 'nowrap' },
      { label: 'fd', get: function (f) { return f.fd; }, num: true,
        fmt: function (v, f) { return v < 0 ? '–' : f.fixed_file ? 'registered file ' + v : String(v); } },
      { label: 'What it is', get: function (f) { return f.fd_target; }, cls: 'fd-target' },
      { label: 'Task', get: function (f) { return f.task; }, num: true,
        fmt: function (v) { return v === null ? 'no task known' : taskId(v); } },
      { label: 'Spawn site', get: function (f) { return f.loc; }, cls: 'loc' },
      { label: 'Submitted', get: function (f) { return f.submitted_at_ns; }, num: true, fmt: function (v) { return '+' + dur(v); } },
      { label: 'In flight for', get: function (f) { return f.age_ns; }, num: true, fmt: dur }
    ], inf, { sort: 6, asc: false, limit: 200,
      note: U.in_flight_omitted ? num(U.in_flight_omitted) + ' more in flight, not listed (see the JSON report).' : '' });
  }

  function run(name, fn) {
    try { fn(); } catch (e) {
      var s = $(name);
      if (s) s.appendChild(el('p', 'warning', 'This section could not be drawn: ' + e.message));
      throw e;
    }
  }
  run('distributions', distributions);
  run('timeline', timeline);
  run('heatmap', heatmap);
  run('stalled', stalled);
  run('io_uring', uring);
  run('sites', sites);
  run('tasks', tasksTable);
  run('why', whyTime);
  document.body.setAttribute('data-rendered', 'yes');
})();
