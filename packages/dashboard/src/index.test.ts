import { describe, expect, it } from 'vitest'
import { createHash } from 'node:crypto'
import { createDashboard } from './index.ts'

describe('the dashboard assets', () => {
  const dashboard = createDashboard()
  const page = dashboard.asset('/')!.body.toString('utf8')
  const importMap = JSON.parse(/<script type="importmap">([\s\S]*?)<\/script>/.exec(page)![1]!) as { imports: Record<string, string> }

  it('serves the page at / with every module it names, and the vendor files the import map points at', () => {
    expect(dashboard.asset('/')!.contentType).toBe('text/html; charset=utf-8')
    for (const target of Object.values(importMap.imports)) expect(dashboard.asset(target), target).toBeDefined()
    for (const [, href] of page.matchAll(/(?:src|href)="(\/ui\/[^"]+)"/g)) expect(dashboard.asset(href!), href).toBeDefined()
  })

  it('resolves every import of every module to a served file or the import map (a typo fails here, not in a browser)', () => {
    const modules = dashboard.paths().filter((path) => path.startsWith('/ui/') && path.endsWith('.js') && !path.startsWith('/ui/vendor/'))
    expect(modules.length).toBeGreaterThan(5)
    for (const path of modules) {
      const text = dashboard.asset(path)!.body.toString('utf8')
      for (const [, specifier] of text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm)) {
        if (!specifier!.startsWith('.')) {
          expect(importMap.imports[specifier!], `${path} imports ${specifier}`).toBeDefined()
          continue
        }
        const resolved = new URL(specifier!, `http://node${path}`).pathname
        expect(dashboard.asset(resolved), `${path} imports ${specifier}`).toBeDefined()
      }
    }
  })

  it('asks for the page\'s data from a small boot module that runs before the views (no Preact in its imports)', () => {
    const scripts = [...page.matchAll(/<script type="module" src="([^"]+)">/g)].map((match) => match[1])
    expect(scripts).toEqual(['/ui/boot.js', '/ui/app.js'])
    const boot = dashboard.asset('/ui/boot.js')!.body.toString('utf8')
    const imports = (text: string) => [...text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm)].map((match) => match[1])
    expect(imports(boot)).toEqual(['./lib/http.js', './lib/query.js'])
    expect([...imports(dashboard.asset('/ui/lib/http.js')!.body.toString('utf8')), ...imports(dashboard.asset('/ui/lib/query.js')!.body.toString('utf8'))]).toEqual([])
  })

  it('preloads every module of the page (no import waterfall), and uPlot only when a chart opens', () => {
    const preloaded = new Set([...page.matchAll(/<link rel="modulepreload" href="([^"]+)">/g)].map((match) => match[1]))
    const entries = new Set(['/ui/boot.js', '/ui/app.js', '/ui/vendor/uplot.js'])
    const modules = dashboard.paths().filter((path) => path.startsWith('/ui/') && path.endsWith('.js') && !entries.has(path))
    for (const path of modules) expect(preloaded.has(path), path).toBe(true)
    expect(preloaded.has('/ui/vendor/uplot.js')).toBe(false)
  })

  it('allows the inline import map by its hash and nothing else inline', () => {
    const map = /<script type="importmap">([\s\S]*?)<\/script>/.exec(page)![1]!
    const hash = createHash('sha256').update(map).digest('base64')
    expect(dashboard.contentSecurityPolicy).toContain(`'sha256-${hash}'`)
    expect(dashboard.contentSecurityPolicy).not.toContain("script-src 'self' 'unsafe-inline'")
    expect(dashboard.contentSecurityPolicy).toContain("frame-ancestors 'none'")
  })

  it('serves none of the .ts files beside the ui (its unit tests and the types of its type check)', () => {
    expect(dashboard.paths().filter((path) => path.endsWith('.ts'))).toEqual([])
    expect(dashboard.asset('/ui/lib/format.test.ts')).toBeUndefined()
    expect(dashboard.asset('/ui/lib/answers.d.ts')).toBeUndefined()
  })

  it('serves JavaScript as JavaScript (module scripts need it)', () => {
    expect(dashboard.asset('/ui/app.js')!.contentType).toBe('text/javascript; charset=utf-8')
    expect(dashboard.asset('/ui/vendor/preact.js')!.contentType).toBe('text/javascript; charset=utf-8')
    expect(dashboard.asset('/ui/nothing.js')).toBeUndefined()
  })
})
