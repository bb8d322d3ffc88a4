/**
 * The memory panel, opened from the pill: global / this workspace / this session lists with
 * search (CJK-aware: the store's own index), each memory's source turns, correct, forget and
 * promote to global; the explicit layers of this session (enable / refresh / disable, and the
 * status with each snapshot's token estimate, as `/memory status` reports it); the palace's
 * memory names and the tree's mainline and open branches for this workspace.
 */
import { useCallback, useEffect, useState } from 'react'
import { getJson, type MemoryItem, messageOf, postJson } from './api.ts'
import { type Key, t } from './i18n.ts'

type Tab = 'global' | 'workspace' | 'session' | 'layers' | 'palace'
const TABS: readonly { id: Tab; label: Key }[] = [
  { id: 'global', label: 'global' },
  { id: 'workspace', label: 'workspace' },
  { id: 'session', label: 'session' },
  { id: 'layers', label: 'layers' },
  { id: 'palace', label: 'palaceTree' },
]

interface Detail {
  readonly sources: readonly { id: string; role: string; text: string; seq: number }[]
}

function MemoryRow(props: { memory: MemoryItem; onChanged: () => void; onError: (text: string) => void }) {
  const { memory, onChanged, onError } = props
  const [sources, setSources] = useState<Detail['sources'] | null>(null)
  const [editing, setEditing] = useState<string | null>(null)
  const act = async (route: 'forget' | 'promote' | 'edit', body: Record<string, string>) => {
    try {
      await postJson(route, body)
      setEditing(null)
      onChanged()
    } catch (error) {
      onError(messageOf(error))
    }
  }
  const toggleSources = async () => {
    if (sources) return setSources(null)
    try {
      setSources((await getJson<Detail>('memory', { id: memory.id })).sources)
    } catch (error) {
      onError(messageOf(error))
    }
  }
  return (
    <li className="dshm-row" data-testid="dshm-memory" data-memory-id={memory.id}>
      {editing === null ? (
        <p className="dshm-row-text">
          <span className="dshm-kind">{memory.kind}</span> {memory.text}
        </p>
      ) : (
        <textarea className="dshm-input dshm-edit" value={editing} onChange={(event: any) => setEditing(event.target.value)} />
      )}
      <div className="dshm-row-actions">
        {editing === null ? (
          <>
            <button type="button" className="dshm-link" onClick={() => void toggleSources()}>
              {t('sources')}
            </button>
            <button type="button" className="dshm-link" onClick={() => setEditing(memory.text)}>
              {t('edit')}
            </button>
            {memory.scope === 'workspace' ? (
              <button type="button" className="dshm-link" data-action="promote" onClick={() => void act('promote', { id: memory.id })}>
                {t('promote')}
              </button>
            ) : null}
            <button type="button" className="dshm-link dshm-danger" data-action="forget" onClick={() => window.confirm(t('confirmForget')) && void act('forget', { id: memory.id })}>
              {t('forget')}
            </button>
          </>
        ) : (
          <>
            <button type="button" className="dshm-link" data-action="save-edit" onClick={() => void act('edit', { id: memory.id, text: editing })}>
              {t('save')}
            </button>
            <button type="button" className="dshm-link" onClick={() => setEditing(null)}>
              {t('cancel')}
            </button>
          </>
        )}
      </div>
      {sources ? (
        <ol className="dshm-sources">
          {sources.length === 0 ? <li className="dshm-muted">{t('noSources')}</li> : null}
          {sources.map((source) => (
            <li key={source.id}>
              <span className="dshm-kind">{source.role}</span> {source.text}
            </li>
          ))}
        </ol>
      ) : null}
    </li>
  )
}

/** What the search box offers for the text typed so far (core/suggest.ts via the `suggest` route). */
interface Hints {
  readonly completions: readonly string[]
  readonly didYouMean: readonly string[]
}
const NO_HINTS: Hints = { completions: [], didYouMean: [] }

/** Below this many results a search also shows "did you mean" (as `dsh-memory search` does). */
const FEW_RESULTS = 3

/** Completions while typing; "did you mean" when the search found little. Each is a button that searches it. */
function SearchHints(props: { hints: Hints; found: number | undefined; onPick: (query: string) => void }) {
  const { hints, found, onPick } = props
  const row = (testId: string, label: string, options: readonly string[]) => (
    <p className="dshm-hints dshm-muted" data-testid={testId}>
      <span>{label}</span>
      {options.map((option) => (
        <button type="button" className="dshm-link" key={option} onClick={() => onPick(option)}>
          {option}
        </button>
      ))}
    </p>
  )
  return (
    <>
      {hints.completions.length > 0 ? row('dshm-completions', t('completions'), hints.completions) : null}
      {found !== undefined && found < FEW_RESULTS && hints.didYouMean.length > 0 ? row('dshm-did-you-mean', t('didYouMean'), hints.didYouMean) : null}
    </>
  )
}

function MemoryList(props: { layer: 'global' | 'workspace' | 'session'; sessionId: string; onError: (text: string) => void }) {
  const { layer, sessionId, onError } = props
  const [query, setQuery] = useState('')
  const [items, setItems] = useState<readonly MemoryItem[] | null>(null)
  const [hints, setHints] = useState<Hints>(NO_HINTS)
  const load = useCallback(async () => {
    try {
      setItems((await getJson<{ items: MemoryItem[] }>('memories', { layer, session: sessionId, q: query })).items)
    } catch (error) {
      onError(messageOf(error))
    }
  }, [layer, sessionId, query, onError])
  useEffect(() => {
    const timer = setTimeout(() => void load(), 200)
    return () => clearTimeout(timer)
  }, [load])
  // Debounced like the list; a failed lookup only means no hints (the list reports errors).
  useEffect(() => {
    if (query.trim() === '') return setHints(NO_HINTS)
    let current = true
    const timer = setTimeout(() => {
      getJson<Hints>('suggest', { layer, session: sessionId, q: query }).then(
        (answer) => current && setHints(answer),
        () => current && setHints(NO_HINTS),
      )
    }, 200)
    return () => {
      current = false
      clearTimeout(timer)
    }
  }, [layer, sessionId, query])
  return (
    <div>
      <input className="dshm-input dshm-search" type="search" data-testid="dshm-search" placeholder={t('search')} value={query} onChange={(event: any) => setQuery(event.target.value)} />
      <SearchHints hints={hints} found={items?.length} onPick={setQuery} />
      {items === null ? <p className="dshm-muted">{t('loading')}</p> : null}
      {items?.length === 0 ? <p className="dshm-muted">{t('empty')}</p> : null}
      <ul className="dshm-list" data-testid="dshm-list">
        {(items ?? []).map((memory) => (
          <MemoryRow key={memory.id} memory={memory} onChanged={() => void load()} onError={onError} />
        ))}
      </ul>
    </div>
  )
}

function Layers(props: { sessionId: string; onError: (text: string) => void }) {
  const { sessionId, onError } = props
  const [status, setStatus] = useState<string>('')
  const run = useCallback(
    async (body: Record<string, string>) => {
      try {
        setStatus((await postJson<{ text: string }>('layers', { session: sessionId, ...body })).text)
      } catch (error) {
        const refused = (error as { status?: number }).status === 409
        setStatus(refused ? t('sessionNotLive') : '')
        if (!refused) onError(messageOf(error))
      }
    },
    [sessionId, onError],
  )
  useEffect(() => void run({ action: 'status' }), [run])
  return (
    <div data-testid="dshm-layers">
      <p className="dshm-muted">{t('layerHelp')}</p>
      {(['global', 'workspace'] as const).map((layer) => (
        <div className="dshm-field" key={layer}>
          <span>{t(layer)}</span>
          <div className="dshm-field-control">
            {(['enable', 'refresh', 'disable'] as const).map((action) => (
              <button type="button" key={action} className="dshm-button" data-layer={layer} data-action={action} onClick={() => void run({ action, layer })}>
                {t(action)}
              </button>
            ))}
          </div>
        </div>
      ))}
      <pre className="dshm-status">{status}</pre>
    </div>
  )
}

interface PalaceView {
  readonly session: { readonly namespace: string | null; readonly archived: boolean }
  readonly palace: readonly { namespace: string; turns: number; months: readonly { month: string; volumes: number }[] }[]
  readonly tree: readonly { project: string; mainline: readonly { kind: string; text: string }[]; branches: readonly { id: string; title: string }[] }[]
}

function PalaceAndTree(props: { sessionId: string; onError: (text: string) => void }) {
  const { sessionId, onError } = props
  const [view, setView] = useState<PalaceView | null>(null)
  const [name, setName] = useState('')
  const load = useCallback(() => {
    getJson<PalaceView>('palace', { session: sessionId }).then(setView, (error: unknown) => onError(messageOf(error)))
  }, [sessionId, onError])
  useEffect(load, [load])
  const giveName = async () => {
    try {
      await postJson('palace-name', { session: sessionId, name })
      setName('')
      load()
    } catch (error) {
      onError(messageOf(error))
    }
  }
  if (!view) return <p className="dshm-muted">{t('loading')}</p>
  return (
    <div data-testid="dshm-palace">
      <h4>{t('palace')}</h4>
      {view.session.namespace ? (
        <p data-testid="dshm-palace-name">
          {t('memoryName')}: <strong>{view.session.namespace}</strong> · {view.session.archived ? t('archived') : t('notArchived')}
        </p>
      ) : (
        <div className="dshm-field">
          <span>{t('nameSession')}</span>
          <div className="dshm-field-control">
            <input className="dshm-input" data-testid="dshm-palace-name-input" value={name} onChange={(event: any) => setName(event.target.value)} />
            <button type="button" className="dshm-button" disabled={name.trim() === ''} onClick={() => void giveName()}>
              {t('save')}
            </button>
          </div>
        </div>
      )}
      {view.palace.length === 0 ? <p className="dshm-muted">{t('noPalace')}</p> : null}
      <ul className="dshm-list">
        {view.palace.map((name) => (
          <li key={name.namespace} className="dshm-row">
            <strong>{name.namespace}</strong> · {name.turns} {t('turns')} · {name.months.map((month) => month.month).join(', ')}
          </li>
        ))}
      </ul>
      <h4>{t('tree')}</h4>
      {view.tree.length === 0 ? <p className="dshm-muted">{t('noTree')}</p> : null}
      {view.tree.map((project) => (
        <div key={project.project} className="dshm-row">
          <strong>{project.project}</strong>
          <p className="dshm-muted">{t('mainline')}</p>
          <ul>
            {project.mainline.map((item, index) => (
              <li key={index}>
                <span className="dshm-kind">{item.kind}</span> {item.text}
              </li>
            ))}
          </ul>
          <p className="dshm-muted">
            {t('branches')}: {project.branches.length === 0 ? t('none') : project.branches.map((branch) => branch.title).join(', ')}
          </p>
        </div>
      ))}
    </div>
  )
}

/** The panel: a drawer over the right edge of the window. */
export function MemoryPanel(props: { sessionId: string; onClose: () => void }) {
  const { sessionId, onClose } = props
  const [tab, setTab] = useState<Tab>('session')
  const [error, setError] = useState<string | null>(null)
  const onError = useCallback((text: string) => setError(text), [])
  return (
    <aside className="dshm-panel" data-testid="dshm-panel" role="dialog" aria-label={t('memory')}>
      <header className="dshm-panel-head">
        <strong>{t('memory')}</strong>
        <button type="button" className="dshm-link" onClick={onClose}>
          {t('close')}
        </button>
      </header>
      <nav className="dshm-tabs">
        {TABS.map((entry) => (
          <button type="button" key={entry.id} data-tab={entry.id} aria-selected={tab === entry.id} className="dshm-tab" onClick={() => setTab(entry.id)}>
            {t(entry.label)}
          </button>
        ))}
      </nav>
      {error ? (
        <p className="dshm-error" role="status">
          {error}
        </p>
      ) : null}
      <div className="dshm-panel-body">
        {tab === 'global' || tab === 'workspace' || tab === 'session' ? <MemoryList key={tab} layer={tab} sessionId={sessionId} onError={onError} /> : null}
        {tab === 'layers' ? <Layers sessionId={sessionId} onError={onError} /> : null}
        {tab === 'palace' ? <PalaceAndTree sessionId={sessionId} onError={onError} /> : null}
      </div>
    </aside>
  )
}
