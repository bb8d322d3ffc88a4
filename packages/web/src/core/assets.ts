/**
 * The browser's stylesheet and its one small script, served from memory under `assets/`
 * (same origin, so the strict CSP `script-src 'self'` holds and nothing is fetched from a CDN).
 */

/** The stylesheet: light and dark palettes as CSS variables; dark follows the system unless a theme was chosen. */
export const STYLESHEET = `
:root {
  --bg: #f6f7fb; --panel: #ffffff; --panel-2: #f1f3f9; --text: #1c2333; --muted: #5f6b85; --border: #e2e6ef;
  --accent: #3b5bdb; --accent-soft: #e7ecff; --danger: #d6336c; --danger-soft: #ffe3ec; --ok: #2b8a3e; --ok-soft: #e6f6ea;
  --s0: #4c6ef5; --s1: #15aabf; --s2: #f59f00; --s3: #ae3ec9; --s4: #e8590c;
  --shadow: 0 1px 2px rgba(20, 30, 60, .06), 0 4px 16px rgba(20, 30, 60, .05);
  color-scheme: light;
}
:root[data-theme="dark"] {
  --bg: #0f1320; --panel: #171c2c; --panel-2: #1e2438; --text: #e3e7f2; --muted: #97a1bb; --border: #2a3148;
  --accent: #7c93ff; --accent-soft: #232c4d; --danger: #ff6b9a; --danger-soft: #3a1d2b; --ok: #69db7c; --ok-soft: #1b3324;
  --s0: #7c93ff; --s1: #3bc9db; --s2: #ffc94d; --s3: #da77f2; --s4: #ff922b;
  --shadow: 0 1px 2px rgba(0, 0, 0, .3), 0 6px 20px rgba(0, 0, 0, .25);
  color-scheme: dark;
}
@media (prefers-color-scheme: dark) {
  :root:not([data-theme="light"]) {
    --bg: #0f1320; --panel: #171c2c; --panel-2: #1e2438; --text: #e3e7f2; --muted: #97a1bb; --border: #2a3148;
    --accent: #7c93ff; --accent-soft: #232c4d; --danger: #ff6b9a; --danger-soft: #3a1d2b; --ok: #69db7c; --ok-soft: #1b3324;
    --s0: #7c93ff; --s1: #3bc9db; --s2: #ffc94d; --s3: #da77f2; --s4: #ff922b;
    --shadow: 0 1px 2px rgba(0, 0, 0, .3), 0 6px 20px rgba(0, 0, 0, .25);
    color-scheme: dark;
  }
}
* { box-sizing: border-box; }
html, body { margin: 0; padding: 0; }
body {
  background: var(--bg); color: var(--text);
  font: 14px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK SC", "PingFang SC", "Microsoft YaHei", sans-serif;
}
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Noto Sans Mono CJK SC", monospace; font-size: 12.5px; }
.app { display: grid; grid-template-columns: 232px 1fr; min-height: 100vh; background: linear-gradient(to right, var(--panel) 231px, var(--border) 231px, var(--border) 232px, transparent 232px); }
.sidebar { padding: 20px 14px; position: sticky; top: 0; height: 100vh; display: flex; flex-direction: column; gap: 4px; }
.brand { display: flex; align-items: center; gap: 10px; font-weight: 700; font-size: 16px; padding: 4px 10px 18px; }
.brand .logo { width: 28px; height: 28px; border-radius: 8px; background: linear-gradient(135deg, var(--s0), var(--s3)); display: grid; place-items: center; color: #fff; font-size: 15px; }
.nav a { display: flex; align-items: center; gap: 10px; padding: 8px 12px; border-radius: 8px; color: var(--muted); font-weight: 500; }
.nav a:hover { background: var(--panel-2); color: var(--text); text-decoration: none; }
.nav a.active { background: var(--accent-soft); color: var(--accent); }
.nav .icon { flex: none; fill: none; stroke: currentColor; stroke-width: 1.8; stroke-linecap: round; stroke-linejoin: round; }
.sidebar .spacer { flex: 1; }
.prefs { border-top: 1px solid var(--border); padding-top: 12px; display: flex; flex-direction: column; gap: 8px; font-size: 12.5px; color: var(--muted); }
.prefs .row { display: flex; align-items: center; justify-content: space-between; gap: 8px; padding: 0 6px; }
.seg { display: inline-flex; border: 1px solid var(--border); border-radius: 8px; overflow: hidden; }
.seg a, .seg button { padding: 3px 10px; background: transparent; border: 0; color: var(--muted); font: inherit; cursor: pointer; }
.seg a.on, .seg button.on { background: var(--accent-soft); color: var(--accent); font-weight: 600; }
.main { padding: 28px 36px 60px; max-width: 1280px; width: 100%; }
.page-head { display: flex; align-items: baseline; justify-content: space-between; gap: 16px; margin-bottom: 18px; flex-wrap: wrap; }
h1 { font-size: 22px; margin: 0; letter-spacing: -.01em; }
h2 { font-size: 15px; margin: 0 0 12px; }
h3 { font-size: 13.5px; margin: 14px 0 8px; color: var(--muted); font-weight: 600; }
.sub { color: var(--muted); font-size: 12.5px; }
.grid { display: grid; gap: 16px; }
.grid.cols-4 { grid-template-columns: repeat(4, minmax(0, 1fr)); }
.grid.cols-2 { grid-template-columns: repeat(2, minmax(0, 1fr)); }
.card { background: var(--panel); border: 1px solid var(--border); border-radius: 12px; padding: 16px 18px; box-shadow: var(--shadow); min-width: 0; }
.card + .card, .grid + .card, .card + .grid, .grid + .grid { margin-top: 16px; }
.grid > .card { margin-top: 0; }
.stat .label { color: var(--muted); font-size: 12.5px; font-weight: 500; }
.stat .value { font-size: 28px; font-weight: 700; letter-spacing: -.02em; margin: 2px 0 6px; }
.chips { display: flex; flex-wrap: wrap; gap: 6px; }
.chip { display: inline-flex; align-items: center; gap: 4px; padding: 1px 8px; border-radius: 999px; background: var(--panel-2); color: var(--muted); font-size: 12px; border: 1px solid var(--border); white-space: nowrap; }
.chip.global { background: color-mix(in srgb, var(--s0) 14%, transparent); color: var(--s0); border-color: transparent; }
.chip.workspace { background: color-mix(in srgb, var(--s1) 16%, transparent); color: var(--s1); border-color: transparent; }
.chip.session { background: color-mix(in srgb, var(--s2) 18%, transparent); color: color-mix(in srgb, var(--s2) 75%, var(--text)); border-color: transparent; }
.chip.warn { background: var(--danger-soft); color: var(--danger); border-color: transparent; }
.chip.okc { background: var(--ok-soft); color: var(--ok); border-color: transparent; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 9px 10px; border-bottom: 1px solid var(--border); vertical-align: top; }
th { color: var(--muted); font-weight: 600; font-size: 12px; text-transform: uppercase; letter-spacing: .03em; }
tr:last-child td { border-bottom: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:hover { background: var(--panel-2); }
.memtext { white-space: pre-wrap; word-break: break-word; }
.clip { display: -webkit-box; -webkit-line-clamp: 3; -webkit-box-orient: vertical; overflow: hidden; }
.toolbar { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; margin-bottom: 14px; }
input[type=search], input[type=text], select, textarea {
  background: var(--panel); color: var(--text); border: 1px solid var(--border); border-radius: 8px; padding: 7px 10px; font: inherit;
}
input[type=search] { flex: 1; min-width: 260px; }
textarea { width: 100%; min-height: 110px; resize: vertical; }
input:focus, select:focus, textarea:focus { outline: 2px solid var(--accent-soft); border-color: var(--accent); }
.btn { display: inline-flex; align-items: center; gap: 6px; border: 1px solid var(--border); background: var(--panel); color: var(--text); border-radius: 8px; padding: 7px 14px; font: inherit; font-weight: 600; cursor: pointer; }
.btn:hover { background: var(--panel-2); text-decoration: none; }
.btn.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
.btn.danger { color: var(--danger); border-color: color-mix(in srgb, var(--danger) 40%, var(--border)); }
.btn.danger:hover { background: var(--danger-soft); }
.actions { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; margin-top: 10px; }
.pager { display: flex; gap: 10px; align-items: center; justify-content: flex-end; margin-top: 12px; color: var(--muted); }
.flash { padding: 10px 14px; border-radius: 10px; background: var(--ok-soft); color: var(--ok); margin-bottom: 16px; font-weight: 600; }
.flash.error { background: var(--danger-soft); color: var(--danger); }
.empty { color: var(--muted); padding: 18px 4px; text-align: center; }
.kv { display: grid; grid-template-columns: 140px 1fr; gap: 6px 14px; font-size: 13px; }
.kv dt { color: var(--muted); }
.kv dt::first-letter { text-transform: uppercase; }
.kv dd { margin: 0; word-break: break-all; }
.timeline { display: flex; flex-direction: column; gap: 10px; }
.msg { border: 1px solid var(--border); border-radius: 10px; padding: 10px 14px; background: var(--panel); }
.msg.user { border-left: 3px solid var(--s0); }
.msg.assistant { border-left: 3px solid var(--s1); background: var(--panel-2); }
.msg .meta { color: var(--muted); font-size: 12px; margin-bottom: 4px; display: flex; gap: 10px; }
.msg.target { outline: 2px solid var(--s2); }
pre.doc { white-space: pre-wrap; word-break: break-word; background: var(--panel-2); border: 1px solid var(--border); border-radius: 10px; padding: 14px; margin: 0; max-height: 70vh; overflow: auto; font-size: 12.5px; }
details summary { cursor: pointer; color: var(--accent); font-weight: 600; }
.chart { margin: 0; }
.chart svg { width: 100%; height: auto; display: block; }
.chart .grid { stroke: var(--border); stroke-width: 1; }
.chart .axis { fill: var(--muted); font-size: 11px; }
.chart .area { opacity: .28; stroke: none; }
.chart .line { fill: none; stroke-width: 2; }
.legend { list-style: none; display: flex; flex-wrap: wrap; gap: 14px; margin: 8px 0 0; padding: 0; color: var(--muted); font-size: 12.5px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 3px; margin-right: 6px; vertical-align: -1px; }
${[0, 1, 2, 3, 4].map((i) => `.series-${i} { fill: var(--s${i}); stroke: var(--s${i}); } .swatch.series-${i} { background: var(--s${i}); }`).join('\n')}
.bar { stroke: none; }
.meter { height: 6px; border-radius: 4px; background: var(--panel-2); overflow: hidden; margin-top: 6px; }
.meter > span { display: block; height: 100%; background: var(--accent); }
.muted { color: var(--muted); }
.right { text-align: right; }
@media (max-width: 960px) {
  .app { grid-template-columns: 1fr; }
  .sidebar { position: static; height: auto; }
  .grid.cols-4 { grid-template-columns: repeat(2, minmax(0, 1fr)); }
  .grid.cols-2 { grid-template-columns: 1fr; }
  .main { padding: 20px; }
}
`

/**
 * The page script: the theme toggle (persisted in a cookie so the server renders the chosen
 * theme without a flash, and in localStorage) and confirmation of destructive forms.
 */
export const SCRIPT = `
(function () {
  var root = document.documentElement;
  function setTheme(theme) {
    root.setAttribute('data-theme', theme);
    try { localStorage.setItem('dshm-theme', theme); } catch (e) {}
    document.cookie = 'dshm_theme=' + theme + '; Path=/; Max-Age=31536000; SameSite=Strict';
    document.querySelectorAll('[data-set-theme]').forEach(function (button) {
      button.classList.toggle('on', button.getAttribute('data-set-theme') === theme);
    });
  }
  if (!root.getAttribute('data-theme')) {
    var saved = null;
    try { saved = localStorage.getItem('dshm-theme'); } catch (e) {}
    if (saved === 'light' || saved === 'dark') setTheme(saved);
  }
  var current = root.getAttribute('data-theme') || (window.matchMedia && matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
  document.querySelectorAll('[data-set-theme]').forEach(function (button) {
    button.classList.toggle('on', button.getAttribute('data-set-theme') === current);
    button.addEventListener('click', function () { setTheme(button.getAttribute('data-set-theme')); });
  });
  document.querySelectorAll('form[data-confirm]').forEach(function (form) {
    form.addEventListener('submit', function (event) {
      if (!window.confirm(form.getAttribute('data-confirm'))) event.preventDefault();
    });
  });
})();
`
