/**
 * Every relative link in the repository's markdown (README.md, docs/, bench/, deploy/,
 * scripts/, packages/) points at a file that exists, and a link with an anchor into a markdown
 * file at a heading it has (GitHub's slugs). Pages move; this keeps their links honest.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const SKIP = new Set(['node_modules', '.git', '.switchboard', 'results', 'dist'])

function markdownFiles(directory: string, deep: boolean): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name) || entry.name.startsWith('.')) return []
    const path = join(directory, entry.name)
    if (entry.isDirectory()) return deep ? markdownFiles(path, true) : []
    return entry.name.endsWith('.md') ? [path] : []
  })
}

/** The markdown of the repository: the root's files and every folder we write docs in. */
function allPages(): string[] {
  return [
    ...markdownFiles(root, false),
    ...['docs', 'bench', 'deploy', 'scripts', 'packages'].filter((name) => existsSync(join(root, name))).flatMap((name) => markdownFiles(join(root, name), true)),
  ]
}

/** The text with fenced code blocks and inline code spans blanked, so examples are not read as links. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '``')
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens; repeats get -1, -2, ... */
function headingSlugs(text: string): Set<string> {
  const slugs = new Set<string>()
  const seen = new Map<string, number>()
  for (const match of text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const words = match[1]!.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    const base = words.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    slugs.add(count === 0 ? base : `${base}-${count}`)
  }
  return slugs
}

interface BrokenLink {
  page: string
  link: string
  why: string
}

function brokenLinks(): BrokenLink[] {
  const broken: BrokenLink[] = []
  const slugsOf = new Map<string, Set<string>>()
  const slugs = (file: string) => {
    let known = slugsOf.get(file)
    if (known === undefined) slugsOf.set(file, (known = headingSlugs(readFileSync(file, 'utf8'))))
    return known
  }
  for (const page of allPages()) {
    const name = relative(root, page)
    for (const match of prose(readFileSync(page, 'utf8')).matchAll(/!?\[(?:[^\][]|\[[^\]]*\])*\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)) {
      const link = match[1]!
      if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('/')) continue // URLs and absolute paths
      const [path, anchor] = link.split('#', 2) as [string, string | undefined]
      const target = path === '' ? page : resolve(dirname(page), decodeURIComponent(path))
      if (!existsSync(target)) {
        broken.push({ page: name, link, why: 'no such file' })
        continue
      }
      if (anchor === undefined || anchor === '' || !target.endsWith('.md') || statSync(target).isDirectory()) continue
      if (!slugs(target).has(anchor.toLowerCase())) broken.push({ page: name, link, why: `no heading #${anchor} in ${relative(root, target)}` })
    }
  }
  return broken
}

describe('markdown links', () => {
  it('slugs headings as GitHub does', () => {
    expect([...headingSlugs('# The fleet\n## Providers API: cloud key configs (issue 20)\n### GET /api/adaptive-routing/history/issues/:id\n## `config.json`\n## The fleet\n```\n# not a heading\n```\n')]).toEqual([
      'the-fleet',
      'providers-api-cloud-key-configs-issue-20',
      'get-apiadaptive-routinghistoryissuesid',
      'configjson',
      'the-fleet-1',
    ])
  })

  it('resolve: every relative link names a file that exists, and every anchor a heading of it', () => {
    expect(allPages().map((page) => relative(root, page))).toEqual(expect.arrayContaining(['README.md', 'docs/api.md', 'bench/README.md']))
    expect(brokenLinks()).toEqual([])
  })
})
