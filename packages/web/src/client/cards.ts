/**
 * What each settings card edits: hand-picked fields of the plugins' live settings namespaces
 * (the host registers them; see each plugin's `src/settings.ts`), with labels in English and
 * Chinese. A namespace the host does not serve shows no card.
 *
 * The cards are data, kept in `cards.json` (one row a field: `[path, type, English, Chinese]`,
 * so adding a field or a translation touches one line); this module checks and types them once.
 */
import table from './cards.json' with { type: 'json' }
import type { Bilingual } from './i18n.ts'

/** How a field is edited. */
export type FieldType = 'integer' | 'decimal' | 'boolean' | 'text' | 'secret' | { readonly choices: readonly string[] }

/** One editable field of a namespace section. */
export interface CardField {
  readonly path: readonly string[]
  readonly type: FieldType
  readonly label: Bilingual
}

/** One card: a namespace and its fields. */
export interface CardSpec {
  readonly namespace: string
  readonly title: Bilingual
  readonly description: Bilingual
  readonly fields: readonly CardField[]
}

const SCALAR_TYPES: readonly FieldType[] = ['integer', 'decimal', 'boolean', 'text', 'secret']

/** One field row of `cards.json`, checked at load: a malformed row fails the web tests, named by its place. */
function field(namespace: string, [path, type, en, zh]: readonly unknown[]): CardField {
  const where = `cards.json ${namespace}.${String(path)}`
  const choices = typeof type === 'object' && type !== null && 'choices' in type ? type.choices : undefined
  const known = SCALAR_TYPES.includes(type as FieldType) || (Array.isArray(choices) && choices.every((choice) => typeof choice === 'string'))
  if (typeof path !== 'string' || !known || typeof en !== 'string' || typeof zh !== 'string') throw new TypeError(`${where}: expected [path, type, English, Chinese]`)
  return { path: path.split('.'), type: type as FieldType, label: { en, zh } }
}

/** The cards, in the order they appear under Settings → Plugins. */
export const CARDS: readonly CardSpec[] = table.map((card) => ({
  namespace: card.namespace,
  title: card.title,
  description: card.description,
  fields: card.fields.map((row) => field(card.namespace, row)),
}))
