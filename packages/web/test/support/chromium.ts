/**
 * Debian's Chromium driven by playwright-core (a test tool's own browser download cannot work
 * offline). `DSHM_CHROMIUM` points at another binary; `scripts/ensure-chromium.sh` installs it.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Browser, chromium } from 'playwright-core'

/** The Chromium binary the tests drive. */
export const CHROMIUM = process.env.DSHM_CHROMIUM ?? '/usr/bin/chromium'

/** Where screenshots go (kept after the run, git-ignored). */
export const SCREENSHOTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-results', 'screenshots')

/** Launch headless Chromium without any background network traffic (the network is closed). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: run scripts/ensure-chromium.sh (apt-get install chromium) or set DSHM_CHROMIUM`)
  mkdirSync(SCREENSHOTS, { recursive: true })
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
}
