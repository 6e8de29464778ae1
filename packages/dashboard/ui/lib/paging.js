// A paged list's pager (GET .../history/issues and GET /api/logs answer `offset` and `total`).

/** "26–50 of 120": the items shown, counted from 1 (never past the total); '' when none are shown. */
export function pageRange(/** @type {number} */ offset, /** @type {number} */ shown, /** @type {number} */ total) {
  if (shown <= 0) return ''
  return `${offset + 1}–${Math.min(offset + shown, total)} of ${total}`
}

/** The offsets of the pages before and after (null where there is none), `size` items a page. */
export function pageSteps(/** @type {number} */ offset, /** @type {number} */ size, /** @type {number} */ total) {
  return { previous: offset <= 0 ? null : Math.max(0, offset - size), next: offset + size >= total ? null : offset + size }
}
