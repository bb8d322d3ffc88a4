/**
 * The profile's `pnpm-workspace.yaml`: DSH writes it when it creates a profile, and pnpm reads
 * it on every `dsh plugin add`. Our packages are not (yet) on a registry when installed from a
 * checkout, so their tarballs are pinned here through `overrides`, and better-sqlite3 must be
 * allowed to build. Edits go through a YAML document (not text splicing) so that every line,
 * comment and key the host or the user wrote stays as it was.
 */
import { isMap, isSeq, parseDocument, type Document, YAMLMap, YAMLSeq } from 'yaml'
import { InstallError } from './errors.ts'

/** The file name inside a profile folder. */
export const WORKSPACE_FILE = 'pnpm-workspace.yaml'

/** Native dependencies of our packages that pnpm 10 must be allowed to build. */
export const BUILT_DEPENDENCIES: readonly string[] = ['better-sqlite3']

/**
 * Lines DSH's own scaffold writes. Without them pnpm uses its isolated layout: the host cannot
 * resolve our packages' children and pnpm installs a second cordis next to the host's.
 */
export const HOST_SCAFFOLD: Readonly<Record<'packages' | 'nodeLinker' | 'autoInstallPeers', unknown>> = Object.freeze({
  packages: ['.'],
  nodeLinker: 'hoisted',
  autoInstallPeers: false,
})

/** What {@link checkScaffold} found missing, as `key: value` strings. */
export function checkScaffold(text: string, file = WORKSPACE_FILE): string[] {
  const doc = parse(text, file)
  const missing: string[] = []
  const packages = doc.get('packages')
  if (!(isSeq(packages) && packages.items.some((item) => String((item as { value?: unknown }).value ?? item) === '.'))) missing.push('packages: [.]')
  if (doc.get('nodeLinker') !== HOST_SCAFFOLD.nodeLinker) missing.push('nodeLinker: hoisted')
  if (doc.get('autoInstallPeers') !== HOST_SCAFFOLD.autoInstallPeers) missing.push('autoInstallPeers: false')
  return missing
}

/** Options of {@link mergeWorkspaceYaml}. */
export interface WorkspaceMerge {
  /** Package name → pnpm spec (e.g. `file:/abs/pkg.tgz`); replaces an earlier pin of the same package. */
  readonly overrides: Readonly<Record<string, string>>
  /** Also write the host scaffold lines that are missing (`dsh-memory install --repair`). */
  readonly repair?: boolean
}

/**
 * Add our overrides and built dependencies to the file's text, keeping everything else.
 * @throws InstallError `profile-broken` when the text is not a YAML mapping.
 */
export function mergeWorkspaceYaml(text: string, merge: WorkspaceMerge, file = WORKSPACE_FILE): string {
  const doc = parse(text, file)
  if (merge.repair) {
    const packages = doc.get('packages')
    if (isSeq(packages)) {
      if (!packages.items.some((item) => String((item as { value?: unknown }).value ?? item) === '.')) packages.add('.')
    } else doc.set('packages', doc.createNode(['.']))
    doc.set('nodeLinker', HOST_SCAFFOLD.nodeLinker)
    doc.set('autoInstallPeers', HOST_SCAFFOLD.autoInstallPeers)
  }
  if (Object.keys(merge.overrides).length > 0) {
    const overrides = mapAt(doc, 'overrides', file)
    for (const [name, spec] of Object.entries(merge.overrides)) overrides.set(name, spec)
  }
  const built = seqAt(doc, 'onlyBuiltDependencies', file)
  for (const name of BUILT_DEPENDENCIES) if (!built.items.some((item) => String((item as { value?: unknown }).value ?? item) === name)) built.add(name)
  return doc.toString()
}

/**
 * Remove the overrides of `names` (what {@link mergeWorkspaceYaml} added), keeping the rest;
 * an emptied `overrides` key goes too. `onlyBuiltDependencies` stays: other packages may need it.
 */
export function removeOverrides(text: string, names: readonly string[], file = WORKSPACE_FILE): string {
  const doc = parse(text, file)
  const overrides = doc.get('overrides')
  if (!isMap(overrides)) return text
  for (const name of names) overrides.delete(name)
  if (overrides.items.length === 0) doc.delete('overrides')
  return doc.toString()
}

/** The overrides currently pinned in the file (package name → spec). */
export function readOverrides(text: string, file = WORKSPACE_FILE): Record<string, string> {
  const value = parse(text, file).toJS() as { overrides?: unknown } | null
  const overrides = value?.overrides
  if (!overrides || typeof overrides !== 'object') return {}
  return Object.fromEntries(Object.entries(overrides).map(([name, spec]) => [name, String(spec)]))
}

function parse(text: string, file: string): Document {
  const doc: Document = parseDocument(text)
  if (doc.errors.length > 0) {
    throw new InstallError('profile-broken', `${file} is not valid YAML: ${doc.errors[0]!.message}`, `fix the file by hand, or move the profile folder away and rerun so DSH recreates it`)
  }
  if (doc.contents === null) doc.contents = new YAMLMap()
  if (!isMap(doc.contents)) {
    throw new InstallError('profile-broken', `${file} must be a YAML mapping (pnpm workspace settings), found ${describe(doc.toJS())}`, `fix the file by hand, or move the profile folder away and rerun so DSH recreates it`)
  }
  return doc
}

function mapAt(doc: Document, key: string, file: string): YAMLMap {
  return collectionAt(doc, key, file, isMap, () => new YAMLMap(), 'a mapping')
}

function seqAt(doc: Document, key: string, file: string): YAMLSeq {
  return collectionAt(doc, key, file, isSeq, () => new YAMLSeq(), 'a list')
}

/** The collection at a top-level key, created when absent; a value of another shape is refused. */
function collectionAt<T>(doc: Document, key: string, file: string, is: (node: unknown) => node is T, create: () => T, shape: string): T {
  const node = doc.get(key)
  if (node === undefined || node === null) {
    const created = create()
    doc.set(key, created)
    return created
  }
  if (!is(node)) throw new InstallError('profile-broken', `${file}: $.${key} must be ${shape}, found ${describe((doc.toJS() as Record<string, unknown>)[key])}`, 'fix the file by hand')
  return node
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'a list' : typeof value === 'object' ? 'a mapping' : JSON.stringify(value)
}
