/**
 * A real Chromium for the dashboard's tests: the binary that ships inside the npm package
 * @sparticuz/chromium, driven by playwright-core (shared/notes/browser.md). Nothing is
 * installed by hand and nothing is downloaded.
 */
import { mkdtemp, mkdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import chromium from '@sparticuz/chromium'
import { chromium as playwright, type BrowserContext, type Page } from 'playwright-core'

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)))

/**
 * Where the tests write their screenshots: docs/dashboard.md's own (`docs/screenshots/`) with
 * UPDATE_SCREENSHOTS=1, else a temp folder, so an ordinary `npm test` takes every picture but
 * leaves the tracked ones alone (every run's differ by a pixel of time).
 */
export const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(root, 'docs/screenshots') : join(tmpdir(), 'switchboard-screenshots')

export interface TestBrowser {
  /** A fresh tab (own storage) on `url`; with `token`, the tab is already signed in. */
  open(url: string, options?: { token?: string }): Promise<Page>
  /** Script errors any page raised so far (uncaught exceptions, with the page's URL). */
  errors(): string[]
  close(): Promise<void>
}

/** Launches Chromium with a fresh profile; flags for a root user on a shared, offline machine. */
export async function launchBrowser(): Promise<TestBrowser> {
  const profile = await mkdtemp(join(tmpdir(), 'sb-chromium-'))
  const launch = async () =>
    playwright.launchPersistentContext(profile, {
      executablePath: await chromium.executablePath(),
      headless: true,
      viewport: { width: 1400, height: 900 },
      locale: 'en-GB',
      timezoneId: 'UTC',
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    })
  let context: BrowserContext
  try {
    context = await launch()
  } catch {
    // @sparticuz/chromium reuses any /tmp/chromium as it is: one half-written by a run killed
    // while it was extracting cannot start. Extracted again, once.
    await rm(join(tmpdir(), 'chromium'), { force: true })
    context = await launch()
  }
  await mkdir(SCREENSHOTS, { recursive: true })
  const errors: string[] = []
  return {
    errors: () => [...errors],
    async open(url, options = {}) {
      const page = await context.newPage()
      page.on('pageerror', (error) => errors.push(`${page.url()}: ${error.message}`))
      if (options.token !== undefined) {
        const token = options.token
        await page.addInitScript((value) => sessionStorage.setItem('switchboard.admin-token', value), token)
      }
      await page.goto(url)
      return page
    },
    async close() {
      await context.close()
      await rm(profile, { recursive: true, force: true })
    },
  }
}

/** Writes `docs/screenshots/<name>.png` of the whole page. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })
}
