/**
 * Server-rendered pages. Each function takes the page's data and a {@link PageContext} and
 * returns a whole HTML document; every piece of stored text goes through {@link html}'s
 * escaping. Forms post to the same origin with the CSRF token.
 */
import type { Cue } from '@dsh-memory/cue-bank'
import type { Conversation, Memory, Message, Persona, Scene } from '@dsh-memory/store'
import type { Branch, BranchEvent, Checkpoint, Project } from '@dsh-memory/tree'
import type { MemoryDetail, MemoryQuery, MemoryRow, Overview, Page, PalaceNamespaceView, TreeProjectView, CueView } from './browser.ts'
import { barChart, bucketDays, stackedAreaChart } from './chart.ts'
import { html, raw, type Raw } from './html.ts'
import { type Lang, LANGS, type MessageKey, translator } from './i18n.ts'

/** What every page needs besides its data. */
export interface PageContext {
  readonly lang: Lang
  /** The chosen theme, or undefined to follow the system. */
  readonly theme: 'light' | 'dark' | undefined
  /** Where the app is mounted (`''` standalone, `/memory` in the host). */
  readonly base: string
  /** The current path and query (relative to `base`), for the language switch. */
  readonly current: string
  /** CSRF token for forms. */
  readonly csrf: string
  readonly flash?: { readonly kind: 'ok' | 'error'; readonly text: string }
}

type Section = 'overview' | 'memories' | 'scenes' | 'conversations' | 'cues' | 'palace' | 'tree'

// Icons as inline SVG paths (24-unit grid, stroked with the text colour): no icon font, no
// glyph the system fonts might lack.
const ICONS: Record<Section, string> = {
  overview: 'M4 13h6V4H4zM14 20h6v-9h-6zM4 20h6v-4H4zM14 8h6V4h-6z',
  memories: 'M12 3l8 4.5-8 4.5-8-4.5zM4 12l8 4.5 8-4.5M4 16.5l8 4.5 8-4.5',
  scenes: 'M4 5h16v14H4zM4 10h16M10 10v9',
  conversations: 'M4 5h16v10H9l-5 4zM8 9h8M8 12h5',
  cues: 'M12 3l2.2 5.6L20 9.3l-4.5 3.9 1.4 5.8L12 16l-4.9 3 1.4-5.8L4 9.3l5.8-.7z',
  palace: 'M3 10l9-6 9 6M5 10v9h14v-9M9 19v-5h6v5',
  tree: 'M6 3v12M6 15a3 3 0 1 0 0 6 3 3 0 0 0 0-6zM18 9a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM18 9c0 4-6 4-12 6',
}

function icon(section: Section): Raw {
  return raw(`<svg class="icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true"><path d="${ICONS[section]}"/></svg>`)
}

const NAV: readonly { section: Section; path: string; key: MessageKey }[] = [
  { section: 'overview', path: '/', key: 'overview' },
  { section: 'memories', path: '/memories', key: 'memories' },
  { section: 'scenes', path: '/scenes', key: 'scenes' },
  { section: 'conversations', path: '/conversations', key: 'conversations' },
  { section: 'cues', path: '/cues', key: 'cues' },
  { section: 'palace', path: '/palace', key: 'palace' },
  { section: 'tree', path: '/tree', key: 'tree' },
]

/** A link inside the app. */
export function href(ctx: Pick<PageContext, 'base'>, path: string, params: Record<string, string | number | undefined | null | false> = {}): string {
  const query = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== false && value !== '') query.set(key, String(value))
  const text = query.toString()
  return `${ctx.base}${path}${text ? `?${text}` : ''}`
}

/** `YYYY-MM-DD HH:mm` (UTC), or a dash. */
export function when(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms <= 0) return '—'
  return new Date(ms).toISOString().slice(0, 16).replace('T', ' ')
}

const dayLabel = (day: number) => new Date(day * 86_400_000).toISOString().slice(5, 10)
const number = (value: number) => value.toLocaleString('en-US')

function layout(ctx: PageContext, section: Section | null, title: string, body: Raw): string {
  const t = translator(ctx.lang)
  const doc = html`<!doctype html>
<html lang="${ctx.lang === 'zh' ? 'zh-CN' : 'en'}"${ctx.theme ? raw(` data-theme="${ctx.theme}"`) : ''}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${title} · ${t('appName')}</title>
<link rel="stylesheet" href="${href(ctx, '/assets/app.css')}">
<script src="${href(ctx, '/assets/app.js')}" defer></script>
</head>
<body>
<div class="app">
<aside class="sidebar">
  <div class="brand"><span class="logo">${raw('<svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true"><path d="M12 3l8 4.5-8 4.5-8-4.5zM4 12l8 4.5 8-4.5M4 16.5l8 4.5 8-4.5" fill="none" stroke="#fff" stroke-width="2" stroke-linejoin="round"/></svg>')}</span><span>${t('appName')}</span></div>
  <nav class="nav">
    ${NAV.map((item) => html`<a href="${href(ctx, item.path)}" class="${item.section === section ? 'active' : ''}" data-nav="${item.section}">${icon(item.section)}${t(item.key)}</a>`)}
  </nav>
  <div class="spacer"></div>
  <div class="prefs">
    <div class="row"><span>${t('theme')}</span><span class="seg"><button type="button" data-set-theme="light">${t('themeLight')}</button><button type="button" data-set-theme="dark">${t('themeDark')}</button></span></div>
    <div class="row"><span>${t('language')}</span><span class="seg">${LANGS.map(
      (lang) => html`<a class="${lang === ctx.lang ? 'on' : ''}" data-lang="${lang}" href="${href(ctx, '/lang', { set: lang, back: ctx.current })}">${lang === 'zh' ? '中文' : 'EN'}</a>`,
    )}</span></div>
  </div>
</aside>
<main class="main">
${ctx.flash ? html`<div class="flash ${ctx.flash.kind === 'error' ? 'error' : ''}" role="status">${ctx.flash.text}</div>` : ''}
${body}
</main>
</div>
</body>
</html>`
  return doc.value
}

function pager(ctx: PageContext, path: string, params: Record<string, string | number | undefined | null | false>, page: Page<unknown>): Raw {
  const t = translator(ctx.lang)
  if (page.page === 0 && !page.hasNext) return html``
  const label = ctx.lang === 'zh' ? `${t('page')} ${page.page + 1} 页` : `${t('page')} ${page.page + 1}`
  return html`<div class="pager">
    ${page.page > 0 ? html`<a class="btn" data-page="prev" href="${href(ctx, path, { ...params, page: page.page - 1 || undefined })}">← ${t('previous')}</a>` : ''}
    <span>${label}</span>
    ${page.hasNext ? html`<a class="btn" data-page="next" href="${href(ctx, path, { ...params, page: page.page + 1 })}">${t('next')} →</a>` : ''}
  </div>`
}

/** Who wrote a shared (workspace or session) row, under its scope; global rows are the viewer's own, unattributed rows name nobody. */
function author(ctx: PageContext, row: { scope: string; createdBy: string }): Raw | string {
  return row.scope !== 'global' && row.createdBy ? html`<div class="sub" data-field="author">${translator(ctx.lang)('author')} ${row.createdBy}</div>` : ''
}

function scopeChip(ctx: PageContext, scope: string): Raw {
  const t = translator(ctx.lang)
  const label = scope === 'global' || scope === 'workspace' || scope === 'session' ? t(scope) : scope
  return html`<span class="chip ${scope}">${label}</span>`
}

function csrfField(ctx: PageContext): Raw {
  return html`<input type="hidden" name="csrf" value="${ctx.csrf}">`
}

// overview ---------------------------------------------------------------------------------------

/** The overview: counts per layer and scope, the chart over time, distillation and cost. */
export function overviewPage(ctx: PageContext, data: Overview): string {
  const t = translator(ctx.lang)
  const c = data.counts
  const scopes = ['global', 'workspace', 'session'] as const
  const cards = html`<div class="grid cols-4">
    <div class="card stat" data-stat="l0"><div class="label">${t('l0')}</div><div class="value">${number(c.conversations)}</div><div class="sub">${number(c.messages.total)} ${t('l0Messages')}</div></div>
    <div class="card stat" data-stat="l1"><div class="label">${t('l1')}</div><div class="value">${number(c.memories.current)}</div><div class="chips">${scopes.map((scope) => html`<span class="chip ${scope}">${t(scope)} ${number(c.memories.byScope[scope] ?? 0)}</span>`)}<span class="chip">${t('superseded')} ${number(c.memories.superseded)}</span></div></div>
    <div class="card stat" data-stat="l2"><div class="label">${t('l2')}</div><div class="value">${number(c.scenes.total)}</div><div class="chips">${scopes.map((scope) => html`<span class="chip ${scope}">${t(scope)} ${number(c.scenes.byScope[scope] ?? 0)}</span>`)}</div></div>
    <div class="card stat" data-stat="l3"><div class="label">${t('l3')}</div><div class="value">${number(c.persona.total)}</div><div class="chips">${(['global', 'workspace'] as const).map((scope) => html`<span class="chip ${scope}">${t(scope)} ${number(c.persona.byScope[scope] ?? 0)}</span>`)}</div></div>
  </div>`

  // Cumulative series per scope (+ scenes) over creation days.
  const points = data.daily.map((day) => ({ day: day.day, values: [day.memories.global ?? 0, day.memories.workspace ?? 0, day.memories.session ?? 0, day.scenes] }))
  const buckets = bucketDays(points, 4)
  const running = [0, 0, 0, 0]
  const cumulative = buckets.sums.map(() => [] as number[])
  buckets.starts.forEach((_, index) => {
    buckets.sums.forEach((series, s) => {
      running[s]! += series[index]!
      cumulative[s]!.push(running[s]!)
    })
  })
  const overTime =
    buckets.starts.length === 0
      ? html`<div class="empty">${t('nothing')}</div>`
      : raw(
          stackedAreaChart({
            title: t('overTime'),
            labels: buckets.starts.map(dayLabel),
            series: [
              { name: `${t('l1')} · ${t('global')}`, values: cumulative[0]! },
              { name: `${t('l1')} · ${t('workspace')}`, values: cumulative[1]! },
              { name: `${t('l1')} · ${t('session')}`, values: cumulative[2]! },
              { name: t('l2'), values: cumulative[3]! },
            ],
          }),
        )

  // Activity: messages captured vs distiller writes per bucket.
  const activityDays = new Map<number, [number, number]>()
  for (const day of data.daily) if (day.messages > 0) activityDays.set(day.day, [day.messages, 0])
  for (const entry of data.distill.perDay) activityDays.set(entry.day, [activityDays.get(entry.day)?.[0] ?? 0, entry.writes])
  const activityPoints = [...activityDays.entries()].sort((a, b) => a[0] - b[0]).map(([day, values]) => ({ day, values }))
  const activity = bucketDays(activityPoints, 2, 30)
  const activityChart =
    activity.starts.length === 0
      ? html`<div class="empty">${t('nothing')}</div>`
      : raw(barChart({ title: t('activity'), width: 460, height: 240, labels: activity.starts.map(dayLabel), series: [{ name: t('messagesPerDay'), values: activity.sums[0]! }, { name: t('distillWrites'), values: activity.sums[1]! }] }))

  const d = data.distill
  const distill = html`<div class="card" data-card="distill"><h2>${t('distillation')}</h2>
    <dl class="kv">
      <dt>${t('lastRun')}</dt><dd>${d.lastRunAt ? when(d.lastRunAt) : t('never')}</dd>
      <dt>${t('lastScan')}</dt><dd>${d.lastScanAt ? when(d.lastScanAt) : t('never')}</dd>
      <dt>${t('pending')}</dt><dd>${d.pendingConversations}</dd>
      <dt>${t('failing')}</dt><dd>${d.failing.length === 0 ? '0' : d.failing.map((entry) => html`<div><a href="${href(ctx, `/conversations/${encodeURIComponent(entry.conversationId)}`)}" class="mono">${entry.conversationId.slice(0, 18)}</a> <span class="chip warn">×${entry.attempts}</span> <span class="sub">${entry.lastError ?? ''}</span></div>`)}</dd>
      ${data.searchIndex ? html`<dt>${t('searchIndex')}</dt><dd>${number(data.searchIndex.memories + data.searchIndex.messages)} ${t('documents')}</dd>` : ''}
      <dt>${t('dataDir')}</dt><dd class="mono">${data.dataDir}</dd>
    </dl>
    ${d.error ? html`<div class="flash error">${d.error}</div>` : ''}
  </div>`

  const rows = data.cost.rows
  const totals = rows.reduce((sum, row) => ({ calls: sum.calls + row.calls, failures: sum.failures + row.failures, input: sum.input + row.inputTokens, output: sum.output + row.outputTokens, cache: sum.cache + row.cacheReadTokens }), { calls: 0, failures: 0, input: 0, output: 0, cache: 0 })
  const costDays = data.cost.days.slice(-30)
  const cost = html`<div class="card" data-card="cost"><h2>${t('cost')}</h2>
    ${rows.length === 0
      ? html`<div class="empty">${t('noCost')}</div>`
      : html`<table><thead><tr><th>${t('provider')}</th><th>${t('model')}</th><th>${t('layer')}</th><th class="num">${t('calls')}</th><th class="num">${t('failures')}</th><th class="num">${t('inputTokens')}</th><th class="num">${t('outputTokens')}</th><th class="num">${t('cacheRead')}</th></tr></thead><tbody>
        ${rows.map((row) => html`<tr><td>${row.provider}</td><td class="mono">${row.model}</td><td><span class="chip">${row.layer}</span></td><td class="num">${number(row.calls)}</td><td class="num">${row.failures ? html`<span class="chip warn">${row.failures}</span>` : '0'}</td><td class="num">${number(row.inputTokens)}</td><td class="num">${number(row.outputTokens)}</td><td class="num">${number(row.cacheReadTokens)}</td></tr>`)}
        <tr><td><strong>${t('total')}</strong></td><td></td><td></td><td class="num"><strong>${number(totals.calls)}</strong></td><td class="num">${number(totals.failures)}</td><td class="num"><strong>${number(totals.input)}</strong></td><td class="num"><strong>${number(totals.output)}</strong></td><td class="num">${number(totals.cache)}</td></tr>
      </tbody></table>
      ${costDays.length > 0 ? html`<h3>${t('costPerDay')}</h3>${raw(barChart({ title: t('costPerDay'), height: 170, labels: costDays.map((day) => day.day.slice(5)), series: [{ name: t('inputTokens'), values: costDays.map((day) => day.rows.reduce((sum, row) => sum + row.inputTokens, 0)) }, { name: t('outputTokens'), values: costDays.map((day) => day.rows.reduce((sum, row) => sum + row.outputTokens, 0)) }] }))}` : ''}`}
  </div>`

  const kinds = Object.entries(c.memories.byKind).sort((a, b) => b[1] - a[1])
  const maxKind = Math.max(1, ...kinds.map(([, n]) => n))
  const kindCard = html`<div class="card"><h2>${t('byKind')}</h2>${kinds.length === 0 ? html`<div class="empty">${t('nothing')}</div>` : kinds.map(([kind, n]) => html`<div style="margin-bottom:8px"><div style="display:flex;justify-content:space-between"><a href="${href(ctx, '/memories', { kind })}">${kind}</a><span class="muted">${number(n)}</span></div><div class="meter"><span style="width:${Math.round((n / maxKind) * 100)}%"></span></div></div>`)}</div>`
  const workspaces = c.workspaces.slice(0, 8)
  const wsCard = html`<div class="card"><h2>${t('workspaces')}</h2>${workspaces.length === 0 ? html`<div class="empty">${t('nothing')}</div>` : html`<table><thead><tr><th>${t('workspace')}</th><th class="num">${t('conversations')}</th><th class="num">${t('l0Messages')}</th><th class="num">${t('memories')}</th></tr></thead><tbody>${workspaces.map((entry) => html`<tr><td class="mono">${entry.workspace ? html`<a href="${href(ctx, '/memories', { workspace: entry.workspace })}">${entry.workspace}</a>` : t('unknownWorkspace')}</td><td class="num">${number(entry.conversations)}</td><td class="num">${number(entry.messages)}</td><td class="num">${number(entry.memories)}</td></tr>`)}</tbody></table>`}</div>`

  const body = html`<div class="page-head"><h1>${t('overview')}</h1><span class="sub mono">${data.dataDir}</span></div>
    ${cards}
    <div class="card" data-card="chart"><h2>${t('overTime')}</h2><div class="sub" style="margin:-8px 0 10px">${t('overTimeHint')}</div>${overTime}</div>
    <div class="grid cols-2"><div class="card" data-card="activity"><h2>${t('activity')}</h2>${activityChart}</div>${distill}</div>
    ${cost}
    <div class="grid cols-2">${kindCard}${wsCard}</div>`
  return layout(ctx, 'overview', t('overview'), body)
}

// memories ---------------------------------------------------------------------------------------

/** The memories list: search and filters, one page of rows. */
export function memoriesPage(ctx: PageContext, query: MemoryQuery, page: Page<MemoryRow>, kinds: readonly string[], suggestions: readonly string[] = []): string {
  const t = translator(ctx.lang)
  const params = { q: query.q, scope: query.scope, kind: query.kind, workspace: query.workspace, sort: query.sort, history: query.includeSuperseded ? '1' : undefined }
  const searching = (query.q ?? '').trim() !== ''
  const form = html`<form class="toolbar" method="get" action="${href(ctx, '/memories')}" role="search">
    <input type="search" name="q" value="${query.q ?? ''}" placeholder="${t('searchPlaceholder')}" aria-label="${t('search')}">
    <select name="scope" aria-label="${t('scope')}"><option value="">${t('allScopes')}</option>${(['global', 'workspace', 'session'] as const).map((scope) => html`<option value="${scope}"${query.scope === scope ? raw(' selected') : ''}>${t(scope)}</option>`)}</select>
    <select name="kind" aria-label="${t('kind')}"><option value="">${t('allKinds')}</option>${kinds.map((kind) => html`<option value="${kind}"${query.kind === kind ? raw(' selected') : ''}>${kind}</option>`)}</select>
    ${searching ? '' : html`<select name="sort" aria-label="sort"><option value="created">${t('sortCreated')}</option><option value="updated"${query.sort === 'updated' ? raw(' selected') : ''}>${t('sortUpdated')}</option><option value="priority"${query.sort === 'priority' ? raw(' selected') : ''}>${t('sortPriority')}</option></select>`}
    ${query.workspace ? html`<input type="hidden" name="workspace" value="${query.workspace}"><span class="chip workspace">${query.workspace} <a href="${href(ctx, '/memories', { ...params, workspace: undefined })}">×</a></span>` : ''}
    <label class="sub"><input type="checkbox" name="history" value="1"${query.includeSuperseded ? raw(' checked') : ''}> ${t('includeSuperseded')}</label>
    <button class="btn primary" type="submit">${t('search')}</button>
  </form>`
  const rows = page.items.map(
    ({ memory, score }) => html`<tr data-memory-id="${memory.id}">
      <td style="width:56%"><a href="${href(ctx, `/memories/${encodeURIComponent(memory.id)}`)}" class="memtext clip">${memory.text}</a></td>
      <td><span class="chip">${memory.kind}</span></td>
      <td>${scopeChip(ctx, memory.scope)}${memory.supersededBy ? html` <span class="chip">${t('superseded')}</span>` : ''}${memory.flags.needsReview === true ? html` <span class="chip warn">!</span>` : ''}<div class="sub mono">${memory.workspace ?? ''}</div>${author(ctx, memory)}</td>
      <td class="sub">${when(memory.createdAt)}</td>
      ${searching ? html`<td class="num">${score === null ? '' : score.toFixed(2)}</td>` : ''}
    </tr>`,
  )
  const table =
    page.items.length === 0
      ? html`<div class="empty">${searching ? t('noMatches') : t('nothing')}</div>`
      : html`<table class="memories"><thead><tr><th>${t('text')}</th><th>${t('kind')}</th><th>${t('scope')}</th><th>${t('created')}</th>${searching ? html`<th class="num">${t('score')}</th>` : ''}</tr></thead><tbody>${rows}</tbody></table>`
  const meant =
    suggestions.length === 0 ? '' : html`<div class="sub" data-did-you-mean>${t('didYouMean')} ${suggestions.map((text, index) => html`${index > 0 ? ' · ' : ''}<a href="${href(ctx, '/memories', { ...params, q: text })}">${text}</a>`)}</div>`
  const body = html`<div class="page-head"><h1>${t('memories')}</h1><span class="sub" data-row-count="${page.items.length}">${t('showing')} ${page.page * page.pageSize + (page.items.length ? 1 : 0)}–${page.page * page.pageSize + page.items.length}</span></div>
    <div class="card">${form}${meant}${table}${page.capped ? html`<div class="sub">${t('cappedNote')}</div>` : ''}${pager(ctx, '/memories', params, page)}</div>`
  return layout(ctx, 'memories', t('memories'), body)
}

/** One memory: text with the edit form, actions, history, sources, feedback, audit. */
export function memoryPage(ctx: PageContext, detail: MemoryDetail): string {
  const t = translator(ctx.lang)
  const m = detail.memory
  const base = `/memories/${encodeURIComponent(m.id)}`
  const editable = m.supersededBy === null
  const fb = detail.feedback
  const votes = Object.entries(fb.bySession)
  const body = html`<div class="page-head"><h1>${t('memories')} <span class="sub mono">${m.id}</span></h1><a href="${href(ctx, '/memories')}">← ${t('backTo')} ${t('memories')}</a></div>
  <div class="grid cols-2" style="grid-template-columns: minmax(0, 3fr) minmax(0, 2fr)">
    <div class="card">
      <div class="chips" style="margin-bottom:10px"><span class="chip">${m.kind}</span>${scopeChip(ctx, m.scope)}${m.supersededBy ? html`<span class="chip">${t('superseded')} → <a href="${href(ctx, `/memories/${encodeURIComponent(m.supersededBy)}`)}">${m.supersededBy.slice(-8)}</a></span>` : ''}${detail.needsReview ? html`<span class="chip warn">${t('needsReview')}</span>` : ''}</div>
      ${editable
        ? html`<form method="post" action="${href(ctx, `${base}/edit`)}" data-form="edit">${csrfField(ctx)}<textarea name="text" aria-label="${t('text')}">${m.text}</textarea>
          <div class="actions"><button class="btn primary" type="submit">${t('edit')}</button><span class="sub">${t('editHint')}</span></div></form>`
        : html`<div class="memtext" data-memory-text>${m.text}</div>`}
      <div class="actions">
        <form method="post" action="${href(ctx, `${base}/forget`)}" data-form="forget" data-confirm="${t('forgetConfirm')}">${csrfField(ctx)}<button class="btn danger" type="submit">${t('forget')}</button></form>
        ${editable && m.scope === 'workspace' ? html`<form method="post" action="${href(ctx, `${base}/promote`)}" data-form="promote" title="${t('promoteHint')}">${csrfField(ctx)}<button class="btn" type="submit">↑ ${t('promote')}</button></form>` : ''}
      </div>
    </div>
    <div class="card"><dl class="kv">
      <dt>${t('id')}</dt><dd class="mono">${m.id}</dd>
      <dt>${t('workspace')}</dt><dd class="mono">${m.workspace ?? '—'}</dd>
      <dt>${t('author')}</dt><dd class="mono" data-field="author">${m.createdBy || '—'}</dd>
      <dt>${t('session')}</dt><dd class="mono">${m.sessionId ? html`<a href="${href(ctx, `/conversations/${encodeURIComponent(m.sessionId)}`)}">${m.sessionId}</a>` : '—'}</dd>
      <dt>${t('priority')}</dt><dd>${m.priority}</dd>
      <dt>${t('revision')}</dt><dd>${m.revision}</dd>
      <dt>${t('created')}</dt><dd>${when(m.createdAt)}</dd>
      <dt>${t('updated')}</dt><dd>${when(m.updatedAt)}</dd>
      ${detail.scenes.length > 0 ? html`<dt>${t('inScenes')}</dt><dd>${detail.scenes.map((scene) => html`<div><a href="${href(ctx, `/scenes/${encodeURIComponent(scene.id)}`)}">${scene.title}</a></div>`)}</dd>` : ''}
    </dl></div>
  </div>
  <div class="grid cols-2">
    <div class="card" data-card="sources"><h2>${t('sources')}</h2>${detail.sources.length === 0 ? html`<div class="empty">${t('noSources')}</div>` : html`<div class="timeline">${detail.sources.map(({ message, conversation }) => messageBlock(ctx, message, html`<a href="${href(ctx, `/conversations/${encodeURIComponent(message.conversationId)}`, { seq: message.seq })}#m-${message.seq}">${conversation?.title ?? message.conversationId.slice(0, 20)}</a>`))}</div>`}</div>
    <div class="card" data-card="feedback"><h2>${t('feedback')}</h2>
      ${votes.length === 0 && fb.helpful + fb.unhelpful + fb.incorrect === 0
        ? html`<div class="empty">${t('noFeedback')}</div>`
        : html`<div class="chips"><span class="chip okc">${t('helpful')} ${fb.helpful}</span><span class="chip">${t('unhelpful')} ${fb.unhelpful}</span><span class="chip warn">${t('incorrect')} ${fb.incorrect}</span></div>
          <table style="margin-top:8px"><tbody>${votes.map(([session, rating]) => html`<tr><td class="mono"><a href="${href(ctx, `/conversations/${encodeURIComponent(session)}`)}">${session.slice(0, 28)}</a></td><td><span class="chip ${rating === 'helpful' ? 'okc' : rating === 'incorrect' ? 'warn' : ''}">${t(rating)}</span></td></tr>`)}</tbody></table>
          <div class="sub">${when(fb.lastAt)}</div>`}
    </div>
  </div>
  <div class="grid cols-2">
    <div class="card" data-card="history"><h2>${t('history')}</h2><div class="timeline">${[...detail.history].reverse().map((version) => html`<div class="msg ${version.id === m.id ? 'user' : ''}"><div class="meta"><a class="mono" href="${href(ctx, `/memories/${encodeURIComponent(version.id)}`)}">${version.id.slice(-12)}</a>${scopeChip(ctx, version.scope)}<span>${when(version.createdAt)}</span>${version.supersededBy ? '' : html`<span class="chip okc">${t('current')}</span>`}</div><div class="memtext">${version.text}</div></div>`)}</div></div>
    <div class="card" data-card="audit"><h2>${t('audit')}</h2><table><tbody>${detail.audit.slice(0, 40).map((entry) => html`<tr><td class="sub">${when(entry.at)}</td><td class="mono">${entry.op}</td><td>${entry.actor ?? ''}</td><td class="mono sub">${entry.entityId.slice(-8)}</td></tr>`)}</tbody></table></div>
  </div>`
  return layout(ctx, 'memories', m.text.slice(0, 40), body)
}

function messageBlock(ctx: PageContext, message: Message, extra?: Raw, target = false): Raw {
  const t = translator(ctx.lang)
  return html`<div class="msg ${message.role}${target ? ' target' : ''}" id="m-${message.seq}" data-message-id="${message.id}"><div class="meta"><strong>${t(message.role)}</strong><span>#${message.seq}</span><span>${when(message.createdAt)}</span>${extra ?? ''}</div><div class="memtext">${message.text}</div></div>`
}

// scenes and persona -----------------------------------------------------------------------------

/** Scenes (paged) and persona documents. */
export function scenesPage(ctx: PageContext, scenes: Page<Scene>, persona: readonly Persona[]): string {
  const t = translator(ctx.lang)
  const body = html`<div class="page-head"><h1>${t('scenes')}</h1></div>
    <div class="card" data-card="persona"><h2>${t('persona')}</h2>${persona.length === 0 ? html`<div class="empty">${t('noPersona')}</div>` : html`<div class="grid cols-2">${persona.map((doc) => html`<div><div class="chips" style="margin-bottom:6px">${scopeChip(ctx, doc.scope)}<span class="sub mono">${doc.workspace ?? ''}</span><span class="sub">v${doc.version} · ${when(doc.updatedAt)}</span></div><pre class="doc">${doc.text}</pre></div>`)}</div>`}</div>
    <div class="card" data-card="scenes"><h2>${t('l2')}</h2>${scenes.items.length === 0 ? html`<div class="empty">${t('nothing')}</div>` : html`<table><thead><tr><th>${t('title')}</th><th>${t('scope')}</th><th class="num">${t('memories')}</th><th>${t('updated')}</th></tr></thead><tbody>${scenes.items.map((scene) => html`<tr><td><a href="${href(ctx, `/scenes/${encodeURIComponent(scene.id)}`)}"><strong>${scene.title}</strong></a><div class="sub clip">${scene.summary}</div></td><td>${scopeChip(ctx, scene.scope)}<div class="sub mono">${scene.workspace ?? ''}</div></td><td class="num">${scene.memoryIds.length}</td><td class="sub">${when(scene.updatedAt)}</td></tr>`)}</tbody></table>`}${pager(ctx, '/scenes', {}, scenes)}</div>`
  return layout(ctx, 'scenes', t('scenes'), body)
}

/** One scene with its memories. */
export function scenePage(ctx: PageContext, scene: Scene, memories: readonly Memory[]): string {
  const t = translator(ctx.lang)
  const body = html`<div class="page-head"><h1>${scene.title}</h1><a href="${href(ctx, '/scenes')}">← ${t('backTo')} ${t('scenes')}</a></div>
    <div class="card"><div class="chips" style="margin-bottom:8px">${scopeChip(ctx, scene.scope)}<span class="sub mono">${scene.workspace ?? ''}</span><span class="sub">r${scene.revision} · ${when(scene.updatedAt)}</span></div><div class="memtext">${scene.summary}</div></div>
    <div class="card"><h2>${t('memories')} (${memories.length})</h2><table><tbody>${memories.map((memory) => html`<tr><td><a href="${href(ctx, `/memories/${encodeURIComponent(memory.id)}`)}" class="memtext">${memory.text}</a></td><td><span class="chip">${memory.kind}</span></td><td>${memory.supersededBy ? html`<span class="chip">${t('superseded')}</span>` : ''}</td></tr>`)}</tbody></table></div>`
  return layout(ctx, 'scenes', scene.title, body)
}

// conversations ----------------------------------------------------------------------------------

/** Conversations, most recently updated first. */
export function conversationsPage(ctx: PageContext, page: Page<Conversation>): string {
  const t = translator(ctx.lang)
  const body = html`<div class="page-head"><h1>${t('conversations')}</h1></div>
    <div class="card">${page.items.length === 0 ? html`<div class="empty">${t('nothing')}</div>` : html`<table><thead><tr><th>${t('title')}</th><th>${t('workspace')}</th><th>${t('started')}</th><th>${t('updated')}</th></tr></thead><tbody>${page.items.map((conversation) => html`<tr data-conversation-id="${conversation.id}"><td><a href="${href(ctx, `/conversations/${encodeURIComponent(conversation.id)}`)}">${conversation.title ?? conversation.id}</a><div class="sub mono">${conversation.id}</div></td><td class="mono sub">${conversation.workspace || t('unknownWorkspace')}</td><td class="sub">${when(conversation.startedAt)}</td><td class="sub">${when(conversation.updatedAt)}</td></tr>`)}</tbody></table>`}${pager(ctx, '/conversations', {}, page)}</div>`
  return layout(ctx, 'conversations', t('conversations'), body)
}

/** One conversation's L0 timeline (one page of messages). */
export function conversationPage(ctx: PageContext, conversation: Conversation, messages: Page<Message>, targetSeq?: number): string {
  const t = translator(ctx.lang)
  const path = `/conversations/${encodeURIComponent(conversation.id)}`
  const body = html`<div class="page-head"><h1>${conversation.title ?? t('timeline')}</h1><a href="${href(ctx, '/conversations')}">← ${t('backTo')} ${t('conversations')}</a></div>
    <div class="card"><dl class="kv"><dt>${t('id')}</dt><dd class="mono">${conversation.id}</dd><dt>${t('workspace')}</dt><dd class="mono">${conversation.workspace || '—'}</dd><dt>${t('started')}</dt><dd>${when(conversation.startedAt)}</dd><dt>${t('ended')}</dt><dd>${when(conversation.endedAt)}</dd></dl></div>
    <div class="card"><h2>${t('timeline')}</h2>${messages.items.length === 0 ? html`<div class="empty">${t('nothing')}</div>` : html`<div class="timeline">${messages.items.map((message) => messageBlock(ctx, message, undefined, message.seq === targetSeq))}</div>`}${pager(ctx, path, {}, messages)}</div>`
  return layout(ctx, 'conversations', conversation.title ?? conversation.id, body)
}

// cue bank ---------------------------------------------------------------------------------------

/** Topics (cues) with keywords and hits, and idioms. */
export function cuesPage(ctx: PageContext, view: CueView, partition: string | undefined): string {
  const t = translator(ctx.lang)
  if (!view.installed) return layout(ctx, 'cues', t('cues'), html`<div class="page-head"><h1>${t('cues')}</h1></div><div class="card"><div class="empty">${t('notInstalled')}</div></div>`)
  const filter = html`<form class="toolbar" method="get" action="${href(ctx, '/cues')}"><select name="partition" aria-label="${t('partition')}"><option value="">${t('allPartitions')}</option>${view.partitions.map((name) => html`<option value="${name}"${name === partition ? raw(' selected') : ''}>${name}</option>`)}</select><button class="btn" type="submit">${t('filter')}</button></form>`
  const cueRow = (cue: Cue) => html`<tr><td><strong>${cue.summary}</strong><div class="chips" style="margin-top:4px">${cue.keywords.slice(0, 8).map((keyword) => html`<span class="chip">${keyword.word}</span>`)}</div></td><td><span class="chip">${cue.level}</span><div class="sub mono">${cue.partition}</div></td><td class="num">${cue.hitCount}</td><td class="sub">${when(cue.lastMentionedAt)}</td></tr>`
  const body = html`<div class="page-head"><h1>${t('cues')}</h1></div>
    <div class="card" data-card="topics"><h2>${t('topics')}</h2>${filter}${view.cues.items.length === 0 ? html`<div class="empty">${t('nothing')}</div>` : html`<table><thead><tr><th>${t('topics')} / ${t('keywords')}</th><th>${t('partition')}</th><th class="num">${t('hits')}</th><th>${t('lastMentioned')}</th></tr></thead><tbody>${view.cues.items.map(cueRow)}</tbody></table>`}${pager(ctx, '/cues', { partition }, view.cues)}</div>
    <div class="card" data-card="idioms"><h2>${t('idioms')}</h2>${view.idioms.length === 0 ? html`<div class="empty">${t('nothing')}</div>` : html`<div class="chips">${view.idioms.map((idiom) => html`<span class="chip" title="${idiom.partition}">${idiom.word} · ${Math.round(idiom.score * 100)}% · ${idiom.turns} ${t('turns')}</span>`)}</div>`}</div>`
  return layout(ctx, 'cues', t('cues'), body)
}

// palace -----------------------------------------------------------------------------------------

/** Every palace: memory names, months, categories, summaries and volumes to read. */
export function palacePage(ctx: PageContext, palaces: readonly PalaceNamespaceView[]): string {
  const t = translator(ctx.lang)
  const read = (view: PalaceNamespaceView, path: string) => href(ctx, '/palace/read', { ws: view.workspace, ns: view.namespace, path })
  const body = html`<div class="page-head"><h1>${t('palace')}</h1></div>
    ${palaces.length === 0
      ? html`<div class="card"><div class="empty">${t('noPalace')}</div></div>`
      : palaces.map(
          (view) => html`<div class="card" data-namespace="${view.namespace}"><h2>${view.namespace} <span class="sub mono">${view.workspace}</span> <span class="chip">${view.turns} ${t('turns')}</span></h2>
      ${view.months.map(
        (month) => html`<h3>${month.month} · ${month.categories.map((category) => html`<span class="chip">${category}</span> `)}</h3>
        <div class="grid cols-2"><div>${month.summary ? html`<details open><summary>${t('summary')}</summary><pre class="doc">${month.summary}</pre></details>` : ''}</div>
        <div><table><thead><tr><th>${t('volumes')}</th><th>${t('categories')}</th><th class="num">${t('turns')}</th></tr></thead><tbody>${month.volumes.map((volume) => html`<tr><td class="mono"><a href="${read(view, volume.path)}" data-volume="${volume.path}">${volume.path.split('/').pop()}</a></td><td><span class="chip">${volume.category}</span></td><td class="num">${volume.turns}</td></tr>`)}</tbody></table></div></div>`,
      )}</div>`,
        )}`
  return layout(ctx, 'palace', t('palace'), body)
}

/** One palace file. */
export function palaceReadPage(ctx: PageContext, args: { workspace: string; namespace: string; path: string; text: string; nextOffset: number | undefined }): string {
  const t = translator(ctx.lang)
  const body = html`<div class="page-head"><h1>${args.namespace} / ${args.path}</h1><a href="${href(ctx, '/palace')}">← ${t('backTo')} ${t('palace')}</a></div>
    <div class="card"><div class="sub mono" style="margin-bottom:8px">${args.workspace}</div><pre class="doc" data-palace-text>${args.text}</pre>
    ${args.nextOffset !== undefined ? html`<div class="pager"><a class="btn" href="${href(ctx, '/palace/read', { ws: args.workspace, ns: args.namespace, path: args.path, offset: args.nextOffset })}">${t('next')} →</a></div>` : ''}</div>`
  return layout(ctx, 'palace', args.path, body)
}

// memory tree ------------------------------------------------------------------------------------

/** Projects of the memory tree. */
export function treePage(ctx: PageContext, projects: readonly Project[] | null): string {
  const t = translator(ctx.lang)
  const body = html`<div class="page-head"><h1>${t('tree')}</h1></div><div class="card">${projects === null ? html`<div class="empty">${t('notInstalled')}</div>` : projects.length === 0 ? html`<div class="empty">${t('noProjects')}</div>` : html`<table><thead><tr><th>${t('projects')}</th><th class="num">${t('stage')}</th><th class="num">${t('revision')}</th><th>${t('updated')}</th></tr></thead><tbody>${projects.map((project) => html`<tr><td><a href="${href(ctx, `/tree/${encodeURIComponent(project.id)}`)}"><strong>${project.name}</strong></a></td><td class="num">${project.stage}</td><td class="num">${project.revision}</td><td class="sub">${when(project.updatedAt)}</td></tr>`)}</tbody></table>`}</div>`
  return layout(ctx, 'tree', t('tree'), body)
}

/** One project: mainline state, branches, checkpoints. */
export function treeProjectPage(ctx: PageContext, view: TreeProjectView): string {
  const t = translator(ctx.lang)
  const p = view.project
  const current = view.branches.find((branch) => branch.id === p.currentBranchId)
  const active = view.items.filter((item) => item.status === 'active')
  const closed = view.items.filter((item) => item.status !== 'active')
  const body = html`<div class="page-head"><h1>${p.name}</h1><a href="${href(ctx, '/tree')}">← ${t('backTo')} ${t('tree')}</a></div>
    <div class="grid cols-4">
      <div class="card stat"><div class="label">${t('stage')}</div><div class="value">${p.stage}</div></div>
      <div class="card stat"><div class="label">${t('revision')}</div><div class="value">${p.revision}</div></div>
      <div class="card stat"><div class="label">${t('currentBranch')}</div><div class="value" style="font-size:16px">${current ? current.title : 'mainline'}</div></div>
      <div class="card stat"><div class="label">${t('workspaces')}</div><div class="sub mono">${view.workspaces.map((workspace) => html`<div>${workspace}</div>`)}</div></div>
    </div>
    <div class="card" data-card="mainline"><h2>${t('mainline')}</h2>${active.length === 0 ? html`<div class="empty">${t('mainlineEmpty')}</div>` : html`<table><tbody>${active.map((item) => html`<tr><td><span class="chip">${item.kind}</span></td><td class="memtext">${item.text}</td><td class="sub">${item.source}</td><td class="sub">${when(item.createdAt)}</td></tr>`)}</tbody></table>`}
      ${closed.length > 0 ? html`<details><summary>${closed.length} ${t('status')}: resolved / dropped</summary><table><tbody>${closed.map((item) => html`<tr><td><span class="chip">${item.kind}</span></td><td class="memtext muted">${item.text}</td><td><span class="chip">${item.status}</span></td></tr>`)}</tbody></table></details>` : ''}</div>
    <div class="grid cols-2">
      <div class="card" data-card="branches"><h2>${t('branches')}</h2>${view.branches.length === 0 ? html`<div class="empty">${t('nothing')}</div>` : html`<table><tbody>${view.branches.map((branch) => html`<tr><td><a href="${href(ctx, `/tree/branch/${encodeURIComponent(branch.id)}`)}">${branch.title}</a>${branch.id === p.currentBranchId ? html` <span class="chip okc">${t('current')}</span>` : ''}</td><td><span class="chip ${branch.status === 'active' ? 'workspace' : ''}">${branch.status}</span></td><td class="num sub">${branch.eventCount} ${t('events')}</td></tr>`)}</tbody></table>`}</div>
      <div class="card" data-card="checkpoints"><h2>${t('checkpoints')}</h2>${view.checkpoints.length === 0 ? html`<div class="empty">${t('nothing')}</div>` : html`<table><tbody>${view.checkpoints.map((checkpoint) => html`<tr><td><a href="${href(ctx, `/tree/checkpoint/${encodeURIComponent(checkpoint.id)}`)}">${checkpoint.title}</a>${checkpoint.id === p.baselineCheckpointId ? html` <span class="chip okc">${t('baseline')}</span>` : ''}</td><td class="num">${t('stage')} ${checkpoint.stage}</td><td class="sub">${when(checkpoint.createdAt)}</td></tr>`)}</tbody></table>`}</div>
    </div>`
  return layout(ctx, 'tree', p.name, body)
}

/** A branch log. */
export function treeBranchPage(ctx: PageContext, branch: Branch, events: readonly BranchEvent[]): string {
  const t = translator(ctx.lang)
  const body = html`<div class="page-head"><h1>${branch.title}</h1><a href="${href(ctx, `/tree/${encodeURIComponent(branch.projectId)}`)}">← ${t('backTo')} ${t('tree')}</a></div>
    <div class="card"><div class="chips"><span class="chip">${branch.status}</span><span class="sub">${t('stage')} ${branch.stage} · ${when(branch.createdAt)}</span></div>${branch.conclusion ? html`<h3>${t('conclusion')}</h3><pre class="doc">${branch.conclusion}</pre>` : ''}</div>
    <div class="card"><div class="timeline">${events.map((event) => html`<div class="msg ${event.kind === 'user' ? 'user' : event.kind === 'assistant' ? 'assistant' : ''}"><div class="meta"><strong>${event.kind}</strong><span>${when(event.createdAt)}</span></div><div class="memtext">${event.text}</div></div>`)}</div></div>`
  return layout(ctx, 'tree', branch.title, body)
}

/** A checkpoint document. */
export function treeCheckpointPage(ctx: PageContext, checkpoint: Checkpoint): string {
  const t = translator(ctx.lang)
  const body = html`<div class="page-head"><h1>${checkpoint.title}</h1><a href="${href(ctx, `/tree/${encodeURIComponent(checkpoint.projectId)}`)}">← ${t('backTo')} ${t('tree')}</a></div>
    <div class="card"><div class="sub">${t('stage')} ${checkpoint.stage} · ${when(checkpoint.createdAt)}</div><pre class="doc">${checkpoint.document}</pre></div>`
  return layout(ctx, 'tree', checkpoint.title, body)
}

// errors -----------------------------------------------------------------------------------------

/** A not-found or error page inside the layout. */
export function messagePage(ctx: PageContext, title: string, text: string): string {
  return layout(ctx, null, title, html`<div class="page-head"><h1>${title}</h1></div><div class="card"><div class="empty">${text}</div></div>`)
}

/** The page a request without the token gets (no layout: nothing of the data is shown). */
export function unauthorizedPage(): string {
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>401 · dsh-memory</title></head><body style="font-family:system-ui,sans-serif;max-width:560px;margin:80px auto;padding:0 20px;line-height:1.6"><h1>401 — token required</h1><p>This memory browser only answers requests that carry its access token. Open the exact URL that <code>dsh-memory serve</code> printed (it contains <code>?token=…</code>); the token is then kept in a cookie for this browser.</p><p lang="zh">此记忆浏览器只响应带有访问令牌的请求。请打开 <code>dsh-memory serve</code> 打印的完整网址（包含 <code>?token=…</code>）。</p></body></html>`.value
}
