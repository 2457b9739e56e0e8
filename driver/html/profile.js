// The profile page's script: reads the run's data (the <script> element
// #tessera-data: the report, and the trace's events for a run; the rows and
// each config's report for a comparison; the points of a sweep; the jobs of
// a suite run against its baseline) and draws it with ECharts, inlined
// beside it. Runs from file:// with no network. window.tessera exposes what
// the page drew (driver/cli/tests/profile_page_test.py reads it).
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('tessera-data').textContent);
  const page = document.getElementById('page');
  const charts = [];
  window.tessera = { ready: false, kind: data.kind, slices: 0, tracks: [], charts: charts };

  // --- small helpers ----------------------------------------------------------
  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const c of children || []) e.appendChild(c);
    return e;
  }
  function add(parent, tag, attrs, children) {
    const e = el(tag, attrs, children);
    parent.appendChild(e);
    return e;
  }
  const us = (ns) => (ns / 1000).toFixed(2);
  const pct = (v) => v.toFixed(1) + '%';
  function chartBox(parent, id, height) {
    const box = add(parent, 'div', { id: id, class: 'chart', style: 'height:' + height + 'px' });
    const chart = echarts.init(box, null, { renderer: 'canvas' });
    charts.push(chart);
    return chart;
  }
  function escapeHtml(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  }
  function waitingFor(row) {
    return Object.entries(row.waiting_for || {})
      .sort((a, b) => b[1] - a[1])
      .map(([who, ns]) => who + ' ' + us(ns))
      .join(', ');
  }
  // A table from rows: columns [heading, (row) => text, text column?].
  function table(parent, id, columns, rows) {
    const wrap = add(parent, 'div', { class: 'scroll' });
    const t = add(wrap, 'table', { id: id });
    const head = add(t, 'tr');
    for (const [h, , text] of columns) add(head, 'th', { text: h, class: text ? 'text' : '' });
    for (const r of rows) {
      const tr = add(t, 'tr');
      for (const [, f, text] of columns) add(tr, 'td', { text: f(r), class: text ? 'text' : '' });
    }
    return t;
  }

  // --- a run's figures ------------------------------------------------------------
  function figures(parent, r) {
    const f = add(parent, 'div', { class: 'figures', id: 'figures' });
    const item = (k, v) => add(f, 'div', {}, [el('b', { text: k + ' ' }), document.createTextNode(v)]);
    item('time', us(r.time_ns) + ' us');
    item('HFU', pct(r.hfu_percent));
    item('TFLOP/s', r.achieved_tflops.toFixed(2) + ' of ' + r.peak_tflops.toFixed(2));
    item('HBM', r.hbm_bandwidth_gbps.toFixed(1) + ' of ' + r.hbm_peak_gbps.toFixed(0) + ' GB/s');
    item('DMA', (r.dma_bytes / 1e6).toFixed(3) + ' MB in ' + r.dma_transfers + ' transfers');
    if (r.bound_by) item('bound by', r.bound_by);
    if (!r.ok) add(parent, 'div', { class: 'error', text: 'FAILED: ' + r.error });
  }

  const categoryColour = {
    instruction: '#4e79a7', semaphore: '#e15759', fetch: '#f28e2b', dma: '#59a14f', 'dma queued': '#c8e6c0',
  };

  // The slices a critical-path step drew: an instruction's on its engine's
  // tracks (the tensor engine's weight lane too), a wait's on the engine's
  // stall track, a descriptor's (queued and moving) on its queue's.
  function sliceKey(trackName, s) {
    const index = s.args ? s.args.index : undefined;
    if (index === undefined) return null;
    if (s.cat === 'instruction') return trackName.split(' ')[0] + '|instruction|' + index;
    if (s.cat === 'semaphore') return trackName.replace(/ stalls$/, '') + '|wait|' + index;
    if (s.cat === 'dma' || s.cat === 'dma queued') return trackName + '|dma|' + index;
    return null;
  }
  function stepKey(step) {
    const kind = step.kind === 'dma queued' ? 'dma' : step.kind;
    return step.resource + '|' + kind + '|' + step.index;
  }
  const pathColour = '#b07aa1';

  // The engine-by-engine timeline: a row per track of the trace (engines,
  // their stalls, DMA queues), a rectangle per slice; zoom with the wheel or
  // the slider, pan by dragging, hover a slice for its label and call site.
  // With a critical path, its steps get a row of their own at the top and
  // the slices they drew are outlined.
  function timeline(parent, trace, path) {
    const groups = {}, names = {};
    const slices = [];
    for (const e of trace.traceEvents || []) {
      if (e.ph === 'M' && e.name === 'process_name') groups[e.pid] = e.args.name;
      else if (e.ph === 'M' && e.name === 'thread_name') names[e.pid + '/' + e.tid] = e.args.name;
      else if (e.ph === 'X') slices.push(e);
    }
    const used = [...new Set(slices.map((s) => s.pid + '/' + s.tid))];
    used.sort((a, b) => {
      const [pa, ta] = a.split('/').map(Number), [pb, tb] = b.split('/').map(Number);
      return pa - pb || ta - tb;
    });
    const steps = (path && path.steps) || [];
    const shift = steps.length ? 1 : 0;
    const track = {};
    used.forEach((k, i) => (track[k] = i + shift));
    const labels = (shift ? ['critical path'] : []).concat(used.map((k) => names[k] || k));
    const onPath = new Set(steps.map(stepKey));
    let outlined = 0;
    const items = slices.map((s, i) => {
      const key = sliceKey(names[s.pid + '/' + s.tid] || '', s);
      const style = { color: categoryColour[s.cat] || '#999' };
      if (key && onPath.has(key)) {
        style.borderColor = '#222';
        style.borderWidth = 2;
        ++outlined;
      }
      return { value: [track[s.pid + '/' + s.tid], s.ts * 1000, (s.ts + s.dur) * 1000, i], itemStyle: style };
    });
    // The path's row: each step over the part of the end time it holds
    // (value[3] < 0 marks a step: -1 - its index).
    steps.forEach((st, j) => {
      if (st.to_ns > st.from_ns)
        items.push({ value: [0, st.from_ns, st.to_ns, -1 - j], itemStyle: { color: pathColour } });
    });
    const end = Math.max(0, ...items.map((d) => d.value[2]));
    const height = Math.max(260, 28 * labels.length + 110);
    const chart = chartBox(parent, 'timeline', height);
    chart.getDom().dataset.slices = String(slices.length);
    function renderItem(params, api) {
      const y = api.value(0);
      const a = api.coord([api.value(1), y]), b = api.coord([api.value(2), y]);
      const h = api.size([0, 1])[1] * 0.7;
      const shape = echarts.graphic.clipRectByRect(
        { x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 1), height: h },
        { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
      return shape && { type: 'rect', transition: ['shape'], shape: shape, style: api.style() };
    }
    function tip(p) {
      if (p.value[3] < 0) {
        const st = steps[-1 - p.value[3]];
        let html = '<b>critical path</b>: ' + escapeHtml(st.resource + ' ' + st.name) + '<br>' +
          st.from_ns.toFixed(1) + ' ns + ' + (st.to_ns - st.from_ns).toFixed(1) + ' ns of the end time';
        if (st.gap) html += '<br>of which ' + st.gap.ns.toFixed(1) + ' ns ' + escapeHtml(st.gap.reason);
        if (st.label) html += '<br>label: ' + escapeHtml(st.label);
        if (st.site) html += '<br>site: ' + escapeHtml(st.site);
        return html;
      }
      const s = slices[p.value[3]];
      const a = s.args || {};
      let html = '<b>' + escapeHtml(s.name) + '</b> on ' + escapeHtml(labels[p.value[0]]) + '<br>' +
        (s.ts * 1000).toFixed(1) + ' ns + ' + (s.dur * 1000).toFixed(1) + ' ns';
      for (const k of ['label', 'site', 'instruction', 'bytes', 'src', 'dst', 'index']) {
        if (a[k] !== undefined) html += '<br>' + k + ': ' + escapeHtml(a[k]);
      }
      return html;
    }
    chart.setOption({
      animation: false,
      tooltip: { formatter: tip, confine: true },
      grid: { left: 130, right: 30, top: 20, bottom: 70 },
      dataZoom: [
        { type: 'inside', xAxisIndex: 0, filterMode: 'weakFilter' },
        { type: 'slider', xAxisIndex: 0, filterMode: 'weakFilter', bottom: 10 },
      ],
      xAxis: { type: 'value', min: 0, max: end, name: 'ns', axisLabel: { formatter: (v) => v.toFixed(0) } },
      yAxis: { type: 'category', data: labels, inverse: true, axisTick: { show: false } },
      series: [{ type: 'custom', renderItem: renderItem, encode: { x: [1, 2], y: 0 }, data: items }],
    });
    window.tessera.slices = slices.length;
    window.tessera.pathSlices = outlined;
    window.tessera.pathSteps = items.length - slices.length;
    window.tessera.tracks = labels;
    window.tessera.sliceArgs = (i) => slices[i];
    // Where slice i is drawn, in pixels of the chart's box (for hovering it).
    window.tessera.slicePixel = (i) => {
      const v = items[i].value;
      const a = chart.convertToPixel({ seriesIndex: 0 }, [v[1], v[0]]);
      const b = chart.convertToPixel({ seriesIndex: 0 }, [v[2], v[0]]);
      return [(a[0] + b[0]) / 2, a[1]];
    };
  }

  // What set the end time: the path's share by engine and by label, and the
  // waits it runs through.
  function criticalPath(parent, r) {
    const p = r.critical_path;
    const byEngine = p.by_engine || [];
    add(parent, 'div', { class: 'note', id: 'path-summary', text: (p.steps || []).length + ' steps, ' +
      (p.waits || []).length + ' waits; on the path: ' +
      byEngine.map((s) => s.engine + ' ' + pct(s.percent)).join(', ') + '. The path is the purple row of the ' +
      'timeline; the slices on it are outlined.' });
    const row = add(parent, 'div', { class: 'row' });
    const left = add(row, 'div'), right = add(row, 'div');
    const chart = chartBox(left, 'path-engines', 40 + 30 * Math.max(1, byEngine.length));
    chart.setOption({
      animation: false,
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' } },
      legend: { top: 0 },
      grid: { left: 70, right: 20, top: 30, bottom: 30 },
      xAxis: { type: 'value', max: 100, name: '% of end time' },
      yAxis: { type: 'category', data: byEngine.map((s) => s.engine), inverse: true },
      series: [
        ['working', (s) => s.ns - s.waiting_ns, '#4e79a7'],
        ['waiting, queued, fetching', (s) => s.waiting_ns, '#e15759'],
      ].map(([name, f, colour]) => ({ name: name, type: 'bar', stack: 'path',
        data: byEngine.map((s) => +(100 * f(s) / r.time_ns).toFixed(2)), itemStyle: { color: colour } })),
    });
    table(right, 'path-labels', [
      ['engine', (s) => s.engine, true],
      ['label', (s) => s.label || '(none)', true],
      ['on path us', (s) => us(s.ns)],
      ['% of end', (s) => pct(s.percent)],
      ['waiting us', (s) => us(s.waiting_ns)],
    ], (p.by_label || []).slice(0, 100));
    add(parent, 'h3', { text: 'Waits on the path' });
    table(parent, 'path-waits', [
      ['engine', (w) => w.engine, true],
      ['label', (w) => w.label || '(none)', true],
      ['site', (w) => w.site || '(none)', true],
      ['waited us', (w) => us(w.waited_ns)],
      ['released by', (w) => w.released_by + (w.released_by_label ? " '" + w.released_by_label + "'" : ''), true],
    ], (p.waits || []).slice().sort((a, b) => b.waited_ns - a.waited_ns).slice(0, 100));
  }

  // Busy, waiting and fetch time of each engine, as parts of the run.
  function stallChart(parent, r) {
    const engines = Object.keys(r.engines).filter((e) => e !== 'dma');
    const part = (f) => engines.map((e) => +(100 * f(r.engines[e]) / r.time_ns).toFixed(2));
    const chart = chartBox(parent, 'stalls', 260);
    chart.setOption({
      animation: false,
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' } },
      legend: { top: 0 },
      grid: { left: 70, right: 20, top: 30, bottom: 30 },
      xAxis: { type: 'value', max: 100, name: '% of run' },
      yAxis: { type: 'category', data: engines },
      series: [
        ['busy', (e) => e.busy_ns, '#4e79a7'],
        ['semaphore wait', (e) => e.semaphore_wait_ns, '#e15759'],
        ['instruction fetch', (e) => e.fetch_wait_ns, '#f28e2b'],
      ].map(([name, f, colour]) => ({ name: name, type: 'bar', stack: 'time', data: part(f), itemStyle: { color: colour } })),
    });
    const list = add(parent, 'div', { class: 'note', id: 'top-stalls' });
    list.textContent = 'top stalls: ' + (r.top_stalls || [])
      .map((s) => s.engine + ' ' + s.reason + ' ' + pct(s.percent)).join('; ');
  }

  // The config's roofs (bf16 peak, HBM bandwidth) and where the run sits.
  function roofline(parent, r) {
    const chart = chartBox(parent, 'roofline', 260);
    const roof = [];
    for (let e = -1; e <= 4; e += 0.05) {
      const ai = Math.pow(10, e);
      roof.push([ai, Math.min(r.peak_tflops, ai * r.hbm_peak_gbps / 1000)]);
    }
    chart.setOption({
      animation: false,
      tooltip: { formatter: (p) => p.seriesName + ': ' + p.value[0].toFixed(1) + ' FLOP/B, ' + p.value[1].toFixed(2) + ' TFLOP/s' },
      grid: { left: 60, right: 20, top: 20, bottom: 45 },
      xAxis: { type: 'log', name: 'FLOP per HBM byte', nameLocation: 'middle', nameGap: 28, min: 0.1, max: 10000 },
      yAxis: { type: 'log', name: 'TFLOP/s', min: 0.001 },
      series: [
        { name: 'roof', type: 'line', showSymbol: false, data: roof, lineStyle: { color: '#888' } },
        { name: 'this run', type: 'scatter', symbolSize: 12, data: r.arithmetic_intensity > 0 && r.achieved_tflops > 0
          ? [[r.arithmetic_intensity, r.achieved_tflops]] : [], itemStyle: { color: '#e15759' } },
      ],
    });
  }

  const costColumns = (key) => [
    ['engine', (r) => r.engine, true],
    [key, (r) => r[key] || '(none)', true],
    ['count', (r) => String(r.count)],
    ['busy us', (r) => us(r.busy_ns)],
    ['waiting us', (r) => us(r.waiting_ns + r.fetch_wait_ns)],
    ['waiting for (us)', waitingFor, true],
    ['bytes', (r) => (r.dma_bytes ? String(r.dma_bytes) : '')],
  ];

  function runPage(r, trace) {
    figures(page, r);
    add(page, 'h2', { text: 'Timeline' });
    add(page, 'div', { class: 'note', text: 'Wheel or slider to zoom, drag to pan; hover a slice for its label, ' +
      'call site and operands. Blue: instructions; red: semaphore waits; orange: instruction fetch; ' +
      'green: DMA descriptors moving data (pale: queued); purple row and outlines: the critical path.' });
    if (trace && trace.traceEvents) timeline(page, trace, r.critical_path);
    else add(page, 'div', { class: 'note', text: 'no trace in this page' });
    if (r.critical_path && r.critical_path.steps) {
      add(page, 'h2', { text: 'Critical path' });
      criticalPath(page, r);
    }
    add(page, 'h2', { text: 'Time by call site' });
    add(page, 'div', { class: 'note', text: 'Each instruction and DMA under the KernelBuilder call that made it ' +
      '(waits the builder inserted count under the operation they held back); largest first.' });
    table(page, 'by-site', costColumns('site'), r.by_site || []);
    add(page, 'h2', { text: 'Time by label' });
    table(page, 'by-label', costColumns('label'), (r.by_label || []).slice(0, 300));
    const row = add(page, 'div', { class: 'row' });
    const left = add(row, 'div'), right = add(row, 'div');
    add(left, 'h2', { text: 'Where each engine spent the run' });
    stallChart(left, r);
    add(right, 'h2', { text: 'Roofline' });
    roofline(right, r);
  }

  function comparePage(rows, reports) {
    add(page, 'h2', { text: 'Configs side by side' });
    table(page, 'compare', [
      ['config', (r) => r.config, true],
      ['status', (r) => r.status, true],
      ['time us', (r) => (r.time_ns ? us(r.time_ns) : '')],
      ['speed-up', (r) => (r.speedup ? r.speedup.toFixed(2) + 'x' : '')],
      ['HFU', (r) => (r.time_ns ? pct(r.hfu_percent) : '')],
      ['TFLOP/s (peak)', (r) => (r.time_ns ? r.achieved_tflops.toFixed(1) + ' (' + r.peak_tflops.toFixed(1) + ')' : '')],
      ['bound by', (r) => (r.bound_by ? r.bound_by + ' ' + r.bound_busy_percent.toFixed(0) + '%' : ''), true],
      ['top stalls', (r) => (r.stalls || []).map((s) => s.engine + ' ' + s.reason + ' ' + pct(s.percent)).join('; '), true],
    ], rows);
    const ran = rows.filter((r) => r.time_ns > 0);
    const chart = chartBox(page, 'compare-time', 300);
    chart.setOption({
      animation: false,
      tooltip: { trigger: 'axis' },
      legend: { top: 0 },
      grid: { left: 70, right: 70, top: 30, bottom: 30 },
      xAxis: { type: 'category', data: ran.map((r) => r.config) },
      yAxis: [{ type: 'value', name: 'time (us)' }, { type: 'value', name: 'speed-up, HFU %', splitLine: { show: false } }],
      series: [
        { name: 'time (us)', type: 'bar', data: ran.map((r) => +(r.time_ns / 1000).toFixed(2)), itemStyle: { color: '#4e79a7' } },
        { name: 'speed-up', type: 'line', yAxisIndex: 1, data: ran.map((r) => +r.speedup.toFixed(2)), itemStyle: { color: '#e15759' } },
        { name: 'HFU %', type: 'line', yAxisIndex: 1, data: ran.map((r) => +r.hfu_percent.toFixed(2)), itemStyle: { color: '#59a14f' } },
      ],
    });
    window.tessera.series = 3;
    add(page, 'h2', { text: 'Top call sites on each config' });
    const top = [];
    (reports || []).forEach((rep, i) => {
      for (const c of ((rep && rep.by_site) || []).slice(0, 5)) top.push(Object.assign({ config: rows[i].config }, c));
    });
    table(page, 'compare-sites', [['config', (r) => r.config, true]].concat(costColumns('site')), top);
  }

  // A sweep: a row per point, and time against the first swept parameter,
  // a line per kernel (and per value of the other parameters).
  function sweepPage(sw) {
    const params = (sw.parameters || []).map((p) => p.name);
    const points = sw.points || [];
    const shown = (v) => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
    add(page, 'div', { class: 'note', id: 'sweep-summary', text: points.length + ' points of study ' + sw.study +
      (sw.description ? ' (' + sw.description + ')' : '') + '; swept: ' + params.join(', ') + '; ' +
      points.filter((p) => p.status === 'pass').length + ' ran' });
    const axis = params[0];
    const xs = [];
    for (const p of points) {
      const v = shown(p.parameters[axis]);
      if (!xs.includes(v)) xs.push(v);
    }
    const series = {};
    for (const p of points) {
      const rest = params.slice(1).map((n) => n + '=' + shown(p.parameters[n])).join(' ');
      const name = p.kernel + (p.variant ? ' ' + p.variant : '') + (rest ? ' ' + rest : '');
      if (!series[name]) series[name] = xs.map(() => null);
      if (p.status === 'pass' && p.report && p.report.time_ns)
        series[name][xs.indexOf(shown(p.parameters[axis]))] = +(p.report.time_ns / 1000).toFixed(3);
    }
    add(page, 'h2', { text: 'Time against ' + axis });
    const chart = chartBox(page, 'sweep-time', 340);
    chart.setOption({
      animation: false,
      tooltip: { trigger: 'axis' },
      legend: { top: 0, type: 'scroll' },
      grid: { left: 70, right: 30, top: 40, bottom: 50 },
      xAxis: { type: 'category', data: xs, name: axis, nameLocation: 'middle', nameGap: 30 },
      yAxis: { type: 'value', name: 'time (us)' },
      series: Object.entries(series).map(([name, data]) => ({ name: name, type: 'line', data: data, connectNulls: false })),
    });
    window.tessera.series = Object.keys(series).length;
    add(page, 'h2', { text: 'Points' });
    table(page, 'sweep', [
      ['kernel', (p) => p.kernel, true],
      ['variant', (p) => p.variant || '', true],
    ].concat(params.map((n) => [n, (p) => shown(p.parameters[n]), true])).concat([
      ['status', (p) => p.status, true],
      ['time us', (p) => (p.report && p.report.time_ns ? us(p.report.time_ns) : '')],
      ['HFU', (p) => (p.report && p.report.time_ns ? pct(p.report.hfu_percent) : '')],
      ['bound by', (p) => (p.report && p.report.bound_by) || '', true],
      ['message', (p) => p.message || '', true],
    ]), points);
  }

  // A suite run: each job's status and its time against the baseline.
  const statusColour = { pass: '#59a14f', slower: '#e15759', faster: '#4e79a7' };
  function regressPage(jobs) {
    const counts = {};
    for (const j of jobs) counts[j.status] = (counts[j.status] || 0) + 1;
    add(page, 'div', { class: 'note', id: 'regress-summary', text: jobs.length + ' jobs: ' +
      Object.entries(counts).map(([s, n]) => n + ' ' + s).join(', ') });
    const compared = jobs.filter((j) => j.change_percent !== undefined);
    add(page, 'h2', { text: 'Time against the baseline' });
    add(page, 'div', { class: 'note', text: compared.length + ' jobs with a baseline time; a bar per job ' +
      '(green: within its tolerance, red: slower, blue: faster).' });
    const chart = chartBox(page, 'regress-change', 340);
    chart.setOption({
      animation: false,
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' },
        formatter: (ps) => ps.map((p) => escapeHtml(p.name) + ': ' + p.value.toFixed(3) + '%').join('<br>') },
      grid: { left: 70, right: 30, top: 30, bottom: 50, containLabel: true },
      dataZoom: [{ type: 'inside' }, { type: 'slider', bottom: 5 }],
      xAxis: { type: 'category', data: compared.map((j) => j.id), axisLabel: { show: compared.length <= 30, rotate: 30 } },
      yAxis: { type: 'value', name: 'time change (%)' },
      series: [{ type: 'bar', data: compared.map((j) => ({ value: +j.change_percent.toFixed(4),
        itemStyle: { color: statusColour[j.status] || '#999' } })) }],
    });
    add(page, 'h2', { text: 'Jobs' });
    const order = { error: 0, fail: 1, timeout: 2, slower: 3, faster: 4 };
    const sorted = jobs.slice().sort((a, b) => (order[a.status] ?? 9) - (order[b.status] ?? 9) || (a.id < b.id ? -1 : 1));
    table(page, 'regress', [
      ['job', (j) => j.id, true],
      ['status', (j) => j.status, true],
      ['time us', (j) => (j.time_ns ? us(j.time_ns) : '')],
      ['baseline us', (j) => (j.baseline_ns ? us(j.baseline_ns) : '')],
      ['change', (j) => (j.change_percent !== undefined ? (j.change_percent >= 0 ? '+' : '') + j.change_percent.toFixed(2) + '%' : '')],
      ['tolerance', (j) => j.tolerance_percent + '%'],
      ['message', (j) => j.message || '', true],
    ], sorted);
  }

  add(page, 'h1', { text: data.title || 'Tessera profile' });
  if (data.kind === 'compare') comparePage(data.compare || [], data.reports || []);
  else if (data.kind === 'sweep') sweepPage(data.sweep || {});
  else if (data.kind === 'regress') regressPage(data.jobs || []);
  else runPage(data.report, data.trace);
  window.addEventListener('resize', () => charts.forEach((c) => c.resize()));
  window.tessera.ready = true;
})();
