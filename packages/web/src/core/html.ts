/**
 * HTML building with escaping by default: every value interpolated into {@link html} is
 * escaped unless it is {@link Raw} (the output of another `html` call or a trusted
 * generator). Memories hold arbitrary user text, `<script>` included, so nothing reaches the
 * page unescaped by accident.
 */

/** Markup that is already safe. */
export class Raw {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

/** Mark trusted markup (generated here, never user text). */
export function raw(value: string): Raw {
  return new Raw(value)
}

/** Escape text for HTML element content and quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`]/g, (char) => `&#${char.charCodeAt(0)};`)
}

/** A value {@link html} accepts. `null`, `undefined` and `false` render nothing. */
export type HtmlValue = Raw | string | number | boolean | null | undefined | readonly HtmlValue[]

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false || value === true) return ''
  if (value instanceof Raw) return value.value
  if (Array.isArray(value)) return value.map(render).join('')
  return escapeHtml(String(value))
}

/** Tagged template: literal parts are trusted, interpolations are escaped. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Raw {
  let out = strings[0] ?? ''
  values.forEach((value, index) => {
    out += render(value) + (strings[index + 1] ?? '')
  })
  return new Raw(out)
}
