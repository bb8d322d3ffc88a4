import { execFileSync } from 'node:child_process'
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { normalizeRemoteUrl, workspaceOf } from '../src/index.ts'
import { readGitConfig, remoteUrl } from '../src/core/workspace-id.ts'
import { rejectionOf, tempDir } from './helpers.ts'

/** Real git, isolated from the machine's own config (no global or system file, fixed identity). */
function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
    env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1', GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' },
  })
}

function repo(remotes: readonly [string, string][] = []): string {
  const dir = realpathSync(tempDir())
  git(dir, 'init', '-q', '-b', 'main')
  for (const [name, url] of remotes) git(dir, 'remote', 'add', name, url)
  return dir
}

describe('normalizeRemoteUrl', () => {
  const same = 'git:github.com/acme/shop-api'
  it.each([
    ['git@github.com:acme/shop-api.git', same],
    ['git@github.com:acme/shop-api', same],
    ['github.com:acme/shop-api.git', same],
    ['ssh://git@github.com:22/acme/shop-api', same],
    ['ssh://git@github.com/acme/shop-api.git/', same],
    ['git+ssh://git@github.com/acme/shop-api.git', same],
    ['https://github.com/acme/shop-api.git', same],
    ['https://user:token@GitHub.COM/acme/shop-api.git', same],
    ['http://ci-bot@github.com:8080/acme/shop-api', same],
    ['git://github.com/acme/shop-api.git', same],
    ['ssh://git@[::1]:2222/acme/shop-api.git', 'git:[::1]/acme/shop-api'],
    ['ssh://me@host.example/~me/tools.git', 'git:host.example/tools'],
    ['git@gitlab.example.com:group/sub/项目.git', 'git:gitlab.example.com/group/sub/项目'],
    ['https://gitlab.example.com/group/sub/%E9%A0%85%E7%9B%AE.git', 'git:gitlab.example.com/group/sub/項目'],
    ['file:///srv/git/shop-api.git', 'git:/srv/git/shop-api'],
    ['/srv/git/shop-api.git', 'git:/srv/git/shop-api'],
    ['../remotes/shop-api.git', 'git:/work/remotes/shop-api'],
  ])('%s → %s', (url, id) => {
    expect(normalizeRemoteUrl(url, '/work/clone')).toBe(id)
  })

  it('never keeps a user name, password or token', () => {
    const id = normalizeRemoteUrl('https://alice:ghp_s3cr3tT0ken@github.com/acme/shop-api.git', '/w')
    expect(id).toBe(same)
    expect(id).not.toMatch(/alice|ghp_|s3cr3t/)
  })

  it('gives nothing for what is no remote', () => {
    expect(normalizeRemoteUrl('', '/w')).toBeUndefined()
    expect(normalizeRemoteUrl('https://github.com/', '/w')).toBeUndefined()
  })
})

describe('readGitConfig', () => {
  it('reads subsections, quoting, escapes, comments, continuations and the old section form', () => {
    const text = [
      '# a comment',
      '[core]',
      '\tbare = false ; trailing comment',
      '[remote "up stream"]',
      '\turl = "git@example.com:a/b.git" # why',
      '[Remote.Fork]',
      '\tURL = https://example.com/c/\\',
      'd.git',
      '[remote "origin"] url = git@example.com:o/r.git',
      '\tfetch = +refs/heads/*:refs/remotes/origin/*',
      '\tmirror',
    ].join('\n')
    const entries = readGitConfig(text)
    expect(entries).toContainEqual({ section: 'remote', subsection: 'up stream', key: 'url', value: 'git@example.com:a/b.git' })
    expect(entries).toContainEqual({ section: 'remote', subsection: 'fork', key: 'url', value: 'https://example.com/c/d.git' })
    expect(entries).toContainEqual({ section: 'remote', subsection: 'origin', key: 'url', value: 'git@example.com:o/r.git' })
    expect(entries).toContainEqual({ section: 'remote', subsection: 'origin', key: 'mirror', value: 'true' })
    expect(entries).toContainEqual({ section: 'core', subsection: undefined, key: 'bare', value: 'false' })
  })

  it('picks origin, else the first remote listed', () => {
    expect(remoteUrl('[remote "a"]\nurl = x:a/a\n[remote "origin"]\nurl = x:o/o\n')).toBe('x:o/o')
    expect(remoteUrl('[remote "b"]\nurl = x:b/b\n[remote "a"]\nurl = x:a/a\n')).toBe('x:b/b')
    expect(remoteUrl('[core]\nbare = false\n')).toBeUndefined()
  })
})

describe('workspaceOf on real git repositories', () => {
  it('is the normalized remote, from the top and from a subdirectory', () => {
    const dir = repo([['origin', 'https://bot:token@github.com/acme/shop-api.git']])
    mkdirSync(join(dir, 'src', 'lib'), { recursive: true })
    expect(workspaceOf(dir)).toBe('git:github.com/acme/shop-api')
    expect(workspaceOf(join(dir, 'src', 'lib'))).toBe('git:github.com/acme/shop-api')
  })

  it('uses origin over other remotes, and the first remote without origin', () => {
    expect(workspaceOf(repo([['fork', 'git@github.com:me/shop-api.git'], ['origin', 'git@github.com:acme/shop-api.git']]))).toBe('git:github.com/acme/shop-api')
    expect(workspaceOf(repo([['upstream', 'git@github.com:acme/b.git'], ['fork', 'git@github.com:me/b.git']]))).toBe('git:github.com/acme/b')
  })

  it('two clones of one bare repository at different paths are one workspace', () => {
    const root = realpathSync(tempDir())
    git(root, 'init', '-q', '--bare', 'remote.git')
    git(root, 'clone', '-q', join(root, 'remote.git'), 'a')
    git(root, 'clone', '-q', join(root, 'remote.git'), 'b')
    const id = workspaceOf(join(root, 'a'))
    expect(id).toBe(`git:${join(root, 'remote')}`)
    expect(workspaceOf(join(root, 'b'))).toBe(id)
  })

  it('a linked worktree (a .git file and commondir) shares its repository’s remote', () => {
    const dir = repo([['origin', 'git@example.com:team/app.git']])
    git(dir, 'commit', '-q', '--allow-empty', '-m', 'init')
    const linked = join(realpathSync(tempDir()), 'feature')
    git(dir, 'worktree', 'add', '-q', '-b', 'feature', linked)
    expect(workspaceOf(linked)).toBe('git:example.com/team/app')
  })

  it('a submodule is its own project (its gitdir under .git/modules has its own remote)', () => {
    const sub = repo([['origin', 'git@example.com:team/lib.git']])
    git(sub, 'commit', '-q', '--allow-empty', '-m', 'lib')
    const main = repo([['origin', 'git@example.com:team/app.git']])
    git(main, '-c', 'protocol.file.allow=always', 'submodule', '--quiet', 'add', sub, 'vendor/lib')
    // The submodule's remote is the local path it was added from; its own config says so.
    git(join(main, 'vendor', 'lib'), 'remote', 'set-url', 'origin', 'git@example.com:team/lib.git')
    expect(workspaceOf(join(main, 'vendor', 'lib'))).toBe('git:example.com/team/lib')
    expect(workspaceOf(main)).toBe('git:example.com/team/app')
  })

  it('keeps the path without a remote, outside git, for a missing directory and with identity path', () => {
    const plain = realpathSync(tempDir())
    const noRemote = repo()
    const withRemote = repo([['origin', 'git@example.com:team/app.git']])
    expect(workspaceOf(plain)).toBe(plain)
    expect(workspaceOf(noRemote)).toBe(noRemote)
    expect(workspaceOf(join(plain, 'gone'))).toBe(join(plain, 'gone'))
    expect(workspaceOf(withRemote, { identity: 'path' })).toBe(withRemote)
    expect(workspaceOf('')).toBe('')
  })

  it('falls back to the path when .git is broken', () => {
    const dir = realpathSync(tempDir())
    writeFileSync(join(dir, '.git'), 'gitdir: ./nowhere\n')
    expect(workspaceOf(dir)).toBe(dir)
  })

  it('refuses an unknown identity, naming the field', async () => {
    const error = await rejectionOf(() => workspaceOf('/x', { identity: 'remote' as never }))
    expect(error.code).toBe('invalid-argument')
    expect((error as { path?: string }).path).toBe('workspaceIdentity')
  })
})
