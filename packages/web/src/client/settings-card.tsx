/**
 * A Settings → Plugins card for one memory namespace. It owns its drafts (the host's card
 * chrome cannot be imported): edits are staged, Save writes them in one revision-fenced
 * request (the host refuses it if the section moved meanwhile), Reset stages a return to the
 * row's config, and a secret field is write-only (the host never sends its value). Values
 * come from the host's settings scope, which is the redacted describe view.
 */
import { useState, useSyncExternalStore } from 'react'
import { messageOf, postJson } from './api.ts'
import type { CardField, CardSpec } from './cards.ts'
import { pick, t } from './i18n.ts'

/** The part of the host's client `SettingsScope` a card reads. */
export interface ScopeLike {
  subscribe(listener: () => void): () => void
  getSnapshot(): { status: 'loading' | 'ready' | 'unavailable'; value: unknown; base: unknown; user: unknown; revision: number | undefined; writable: boolean }
}

type Draft = { readonly kind: 'set'; readonly raw: string | boolean } | { readonly kind: 'unset' }

function at(value: unknown, path: readonly string[]): unknown {
  let node = value
  for (const part of path) node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined
  return node
}

function has(value: unknown, path: readonly string[]): boolean {
  const parent = at(value, path.slice(0, -1))
  return parent !== null && typeof parent === 'object' && path[path.length - 1]! in (parent as object)
}

/** A draft as the value to store; throws naming the field when it does not parse. */
function parse(field: CardField, raw: string | boolean): unknown {
  if (field.type === 'boolean') return raw === true
  const text = String(raw).trim()
  if (field.type === 'integer') {
    if (!/^\d+$/.test(text)) throw new Error(`${field.path.join('.')}: ${t('invalidNumber')}`)
    return Number(text)
  }
  if (field.type === 'decimal') {
    const value = Number(text)
    if (text === '' || !Number.isFinite(value)) throw new Error(`${field.path.join('.')}: ${t('invalidNumber')}`)
    return value
  }
  return String(raw)
}

function FieldControl(props: { field: CardField; shown: unknown; disabled: boolean; onChange: (raw: string | boolean) => void }) {
  const { field, shown, disabled, onChange } = props
  const id = `dshm-${field.path.join('-')}`
  if (field.type === 'boolean') {
    return <input id={id} type="checkbox" checked={shown === true} disabled={disabled} onChange={(event: any) => onChange(event.target.checked)} />
  }
  if (typeof field.type === 'object') {
    return (
      <select id={id} className="dshm-input" value={String(shown ?? '')} disabled={disabled} onChange={(event: any) => onChange(event.target.value)}>
        {field.type.choices.map((choice) => (
          <option key={choice} value={choice}>
            {choice}
          </option>
        ))}
      </select>
    )
  }
  return (
    <input
      id={id}
      className="dshm-input"
      type={field.type === 'secret' ? 'password' : 'text'}
      autoComplete="off"
      placeholder={field.type === 'secret' ? t('secretPlaceholder') : ''}
      value={String(shown ?? '')}
      disabled={disabled}
      onChange={(event: any) => onChange(event.target.value)}
    />
  )
}

/** The card. `scope` is bound once per namespace by the plugin's `apply`. */
export function SettingsCard(props: { scope: ScopeLike; card: CardSpec }) {
  const { scope, card } = props
  const snapshot = useSyncExternalStore(scope.subscribe, scope.getSnapshot)
  const [open, setOpen] = useState(false)
  const [drafts, setDrafts] = useState<Record<string, Draft>>({})
  const [notice, setNotice] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null)
  const [saving, setSaving] = useState(false)
  const dirty = Object.keys(drafts).length > 0
  const disabled = saving || snapshot.status !== 'ready' || !snapshot.writable

  const stage = (field: CardField, draft: Draft) => {
    setNotice(null)
    setDrafts((previous) => ({ ...previous, [field.path.join('.')]: draft }))
  }

  const save = async () => {
    setNotice(null)
    type Op = { op: 'set' | 'unset'; path: readonly string[]; value?: unknown }
    let ops: Op[]
    try {
      ops = card.fields.flatMap((field): Op[] => {
        const draft = drafts[field.path.join('.')]
        if (!draft) return []
        if (draft.kind === 'unset') return [{ op: 'unset', path: field.path }]
        // A blank secret keeps the stored key: the card never saw it, so blank is not "empty".
        if (field.type === 'secret' && String(draft.raw) === '') return []
        return [{ op: 'set', path: field.path, value: parse(field, draft.raw) }]
      })
    } catch (error) {
      setNotice({ kind: 'error', text: messageOf(error) })
      return
    }
    if (ops.length === 0) {
      setDrafts({})
      return
    }
    setSaving(true)
    try {
      await postJson('settings', { namespace: card.namespace, ops, expectedRevision: snapshot.revision })
      setDrafts({})
      setNotice({ kind: 'ok', text: t('saved') })
    } catch (error) {
      // The host is the authority: its message names the refused field; the drafts stay to fix.
      setNotice({ kind: 'error', text: (error as { status?: number }).status === 409 ? t('conflict') : messageOf(error) })
    } finally {
      setSaving(false)
    }
  }

  return (
    <section className="dshm-card" data-testid={`dshm-card-${card.namespace}`}>
      <button type="button" className="dshm-card-head" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span className="dshm-card-title">{pick(card.title)}</span>
        <span className="dshm-card-desc">{pick(card.description)}</span>
        {dirty ? <span className="dshm-badge">{t('unsaved')}</span> : null}
      </button>
      {open ? (
        <div className="dshm-card-body">
          {snapshot.status === 'loading' ? <p className="dshm-muted">{t('loading')}</p> : null}
          {snapshot.status === 'unavailable' ? <p className="dshm-muted">{t('unavailable')}</p> : null}
          {snapshot.status === 'ready' && !snapshot.writable ? <p className="dshm-muted">{t('notWritable')}</p> : null}
          {card.fields.map((field) => {
            const key = field.path.join('.')
            const draft = drafts[key]
            const overridden = draft ? draft.kind === 'set' : has(snapshot.user, field.path)
            const shown = field.type === 'secret' ? (draft?.kind === 'set' ? draft.raw : '') : draft?.kind === 'set' ? draft.raw : draft?.kind === 'unset' ? at(snapshot.base, field.path) : at(snapshot.value, field.path)
            return (
              <div className="dshm-field" key={key} data-field={key}>
                <label htmlFor={`dshm-${field.path.join('-')}`}>{pick(field.label)}</label>
                <div className="dshm-field-control">
                  <span className="dshm-field-meta">
                    {overridden ? <span className="dshm-badge">{t('overridden')}</span> : null}
                    {overridden || draft ? (
                      <button type="button" className="dshm-link" disabled={disabled} onClick={() => stage(field, { kind: 'unset' })}>
                        {t('reset')}
                      </button>
                    ) : null}
                  </span>
                  <FieldControl field={field} shown={shown} disabled={disabled} onChange={(raw) => stage(field, { kind: 'set', raw })} />
                </div>
              </div>
            )
          })}
          {notice ? <p className={notice.kind === 'ok' ? 'dshm-ok' : 'dshm-error'} role="status">{notice.text}</p> : null}
          <div className="dshm-actions">
            <button type="button" className="dshm-button" disabled={!dirty || saving} onClick={() => setDrafts({})}>
              {t('discard')}
            </button>
            <button type="button" className="dshm-button dshm-primary" disabled={!dirty || disabled} onClick={() => void save()}>
              {t('saveAll')}
            </button>
          </div>
        </div>
      ) : null}
    </section>
  )
}
