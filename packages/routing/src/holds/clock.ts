/**
 * Hybrid logical clock: the version (wall ms, counter, node id) every hold and release carries,
 * so the fleet merges by "highest version wins" (design.md, "Cluster model"). The counter orders
 * changes within a millisecond and after a clock step back; the node id breaks the last tie.
 */

/** One point of hybrid logical time. */
export interface Version {
  /** Milliseconds since the epoch, never behind any version this node has made or seen. */
  wallMs: number
  /** Orders versions that share `wallMs`. */
  counter: number
  /** The node that made the version; the final tie-break. */
  nodeId: string
}

/** Orders two versions: negative when `left` is older, positive when newer, 0 when equal. */
export function compareVersions(left: Version, right: Version): number {
  if (left.wallMs !== right.wallMs) return left.wallMs < right.wallMs ? -1 : 1
  if (left.counter !== right.counter) return left.counter < right.counter ? -1 : 1
  if (left.nodeId === right.nodeId) return 0
  return left.nodeId < right.nodeId ? -1 : 1
}

/** Creates the hybrid logical clock of node `nodeId`. */
export function createClock(nodeId: string) {
  let wallMs = 0
  let counter = 0
  return {
    /** A new version for a local change at `now`, newer than every version made or observed so far. */
    tick(now: number): Version {
      counter = now > wallMs ? 0 : counter + 1
      wallMs = Math.max(wallMs, now)
      return { wallMs, counter, nodeId }
    },
    /** Takes in a version from another node, so the next `tick` is newer than it. */
    observe(remote: Version, now: number): void {
      const nextWall = Math.max(wallMs, remote.wallMs, now)
      if (nextWall === wallMs && nextWall === remote.wallMs) counter = Math.max(counter, remote.counter)
      else if (nextWall === remote.wallMs) counter = remote.counter
      else if (nextWall !== wallMs) counter = 0
      wallMs = nextWall
    },
  }
}
