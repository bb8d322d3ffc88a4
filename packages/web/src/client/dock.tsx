/**
 * The memory pill above the composer (slot `conversation.input.dock`): this session's memory
 * mode with a switch (auto / chat / work / off, and write-only), what recall put in front of
 * the model for the last turn (count; opens the list), distillation pending or running, and
 * the button that opens the memory panel. It re-reads its state every few seconds while the
 * session is on screen, and at once after a change.
 */
import { useCallback, useEffect, useState } from 'react'
import { getJson, messageOf, MODES, type Mode, postJson, type SessionState } from './api.ts'
import { t } from './i18n.ts'
import { MemoryPanel } from './panel.tsx'

/** How often the pill re-reads its state (recall and distillation happen in the background). */
const REFRESH_MS = 3000

/** The session id from the dock's props (the host passes the session; a bare id is accepted too). */
export function sessionIdOf(props: { session?: { id?: string } | string; sessionId?: string }): string | undefined {
  if (typeof props.session === 'string') return props.session
  return props.session?.id ?? props.sessionId
}

export function MemoryDock(props: { session?: { id?: string } | string; sessionId?: string }) {
  const sessionId = sessionIdOf(props)
  const [state, setState] = useState<SessionState | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [menu, setMenu] = useState<'mode' | 'recall' | null>(null)
  const [panel, setPanel] = useState(false)

  const reload = useCallback(async () => {
    if (!sessionId) return
    try {
      setState(await getJson<SessionState>('state', { session: sessionId }))
      setError(null)
    } catch (failure) {
      setError(messageOf(failure))
    }
  }, [sessionId])

  useEffect(() => {
    void reload()
    const timer = setInterval(() => void reload(), REFRESH_MS)
    return () => clearInterval(timer)
  }, [reload])

  if (!sessionId) return null

  const choose = async (patch: { mode?: Mode; inject?: 'follow' | 'off' }) => {
    setMenu(null)
    try {
      setState(await postJson<SessionState>('mode', { session: sessionId, ...patch }))
      setError(null)
    } catch (failure) {
      setError(messageOf(failure))
    }
  }

  const session = state?.session
  const writeOnly = session?.inject === 'off' && session.mode !== 'off'
  const distill = state?.distill
  return (
    <div className="dshm-dock" data-testid="dshm-pill">
      <div className="dshm-pill">
        <span className="dshm-pill-label">{t('memory')}</span>
        <button type="button" className="dshm-chip" data-testid="dshm-mode" aria-expanded={menu === 'mode'} onClick={() => setMenu(menu === 'mode' ? null : 'mode')}>
          {session ? `${t(`mode.${session.mode}`)}${writeOnly ? ` · ${t('writeOnly')}` : ''}${session.chosen ? '' : ` (${t('default')})`}` : '…'}
        </button>
        <button type="button" className="dshm-chip" data-testid="dshm-recalled" disabled={!state?.recall} onClick={() => setMenu(menu === 'recall' ? null : 'recall')}>
          {state?.recall ? `${state.recall.count} ${t('recalled')}` : t('recalledNone')}
        </button>
        {distill && (distill.running || distill.pending > 0) ? (
          <span className="dshm-chip dshm-quiet" data-testid="dshm-distill">
            {distill.running ? t('distillRunning') : `${distill.pending} ${t('distillPending')}`}
          </span>
        ) : null}
        <button type="button" className="dshm-chip" data-testid="dshm-open-panel" title={t('openPanel')} onClick={() => setPanel(true)}>
          ⤢
        </button>
        {error ? <span className="dshm-error" role="status">{error}</span> : null}
      </div>
      {menu === 'mode' && session ? (
        <div className="dshm-menu" role="menu" data-testid="dshm-mode-menu">
          {MODES.map((mode) => (
            <button type="button" key={mode} role="menuitemradio" aria-checked={session.mode === mode} data-mode={mode} className="dshm-menu-item" onClick={() => void choose({ mode })}>
              <strong>{t(`mode.${mode}`)}</strong> <span className="dshm-muted">{t(`mode.hint.${mode}`)}</span>
            </button>
          ))}
          <label className="dshm-menu-item">
            <input type="checkbox" data-testid="dshm-write-only" checked={writeOnly} disabled={session.mode === 'off'} onChange={(event: any) => void choose({ inject: event.target.checked ? 'off' : 'follow' })} />{' '}
            <strong>{t('writeOnly')}</strong> <span className="dshm-muted">{t('writeOnly.hint')}</span>
          </label>
        </div>
      ) : null}
      {menu === 'recall' && state?.recall ? (
        <ul className="dshm-menu" data-testid="dshm-recall-list">
          {state.recall.memories.map((memory) => (
            <li key={memory.id} className="dshm-menu-item">
              <span className="dshm-kind">{memory.kind}</span> {memory.text}
            </li>
          ))}
        </ul>
      ) : null}
      {panel ? <MemoryPanel sessionId={sessionId} onClose={() => setPanel(false)} /> : null}
    </div>
  )
}
