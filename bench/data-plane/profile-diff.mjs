/**
 * Where two CPU profiles differ, per request: the self time of every function (by name, file and
 * line) summed over every `.cpuprofile` in a directory, divided by that side's request count,
 * then the functions whose time per request grew or shrank most from A to B. For the profiles
 * `bench/data-plane/ab.ts --profile` writes (results/ab/profile-A, profile-B) and the request counts it
 * prints.
 *
 *   node bench/data-plane/profile-diff.mjs <dir A> <requests A> <dir B> <requests B> [--top 30]
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parseArgs } from 'node:util'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' } } })
if (positionals.length !== 4) {
  console.error('node bench/data-plane/profile-diff.mjs <dir A> <requests A> <dir B> <requests B> [--top 30]')
  process.exit(2)
}
const [dirA, requestsA, dirB, requestsB] = positionals
const top = Math.max(1, Number(values.top))
const root = join(import.meta.dirname, '..', '..')

/** Self time in µs per function key, summed over the directory's profiles. */
function selfTimes(dir) {
  const times = new Map()
  let total = 0
  for (const name of readdirSync(dir).filter((file) => file.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, name), 'utf8'))
    const keyOf = new Map()
    for (const node of profile.nodes) {
      const { functionName, url, lineNumber } = node.callFrame
      const file = url.startsWith('file://') ? relative(root, new URL(url).pathname) : url
      keyOf.set(node.id, `${functionName || '(anonymous)'} ${file}${file ? `:${lineNumber + 1}` : ''}`)
    }
    for (let index = 0; index < profile.samples.length; index++) {
      const key = keyOf.get(profile.samples[index])
      const delta = profile.timeDeltas[index] ?? 0
      times.set(key, (times.get(key) ?? 0) + delta)
      total += delta
    }
  }
  return { times, total }
}

const a = selfTimes(dirA)
const b = selfTimes(dirB)
const perA = Number(requestsA)
const perB = Number(requestsB)
const rows = []
for (const key of new Set([...a.times.keys(), ...b.times.keys()])) {
  const usA = (a.times.get(key) ?? 0) / perA
  const usB = (b.times.get(key) ?? 0) / perB
  rows.push({ key, usA, usB, delta: usB - usA })
}
const fmt = (value) => value.toFixed(3)
console.log(`A: ${fmt(a.total / perA)} µs/request sampled over ${perA} requests; B: ${fmt(b.total / perB)} µs/request over ${perB}; B - A: ${fmt(b.total / perB - a.total / perA)}\n`)
for (const [title, sorted] of [
  ['grew most from A to B', [...rows].sort((x, y) => y.delta - x.delta)],
  ['shrank most from A to B', [...rows].sort((x, y) => x.delta - y.delta)],
]) {
  console.log(`${title} (µs/request):\n\n| function | A | B | B - A |\n| --- | ---: | ---: | ---: |`)
  for (const row of sorted.slice(0, top)) console.log(`| ${row.key} | ${fmt(row.usA)} | ${fmt(row.usB)} | ${fmt(row.delta)} |`)
  console.log('')
}
