/** The pre-tuned numbers of adaptive load balancing: not user-configurable by design (reference: "Configuration"). */

/** How often the gateway calls `recompute` (reference: "Every 5 seconds"). */
export const RECOMPUTE_INTERVAL_MS = 5_000

/** The fixed scale of a route's weight: a perfect route scores the maximum. */
export const WEIGHT_MAX = 100
/** No route that is not failed ever weighs less than this, so it keeps being re-probed. */
export const WEIGHT_FLOOR = 5

/** Half-life of the error counters and the recent latency: old errors fade in tens of seconds. */
export const RECENT_HALF_LIFE_MS = 20_000
/** Half-life of a route's own latency baseline: long enough that a slowdown stands out against it. */
export const BASELINE_HALF_LIFE_MS = 600_000

/** The error rate divides by at least this many (decayed) attempts: one early failure is not a dead route. */
export const ERROR_RATE_MIN_VOLUME = 5
/** An error rate at or above this gives the full error penalty. */
export const ERROR_RATE_FULL_PENALTY = 0.25

/** Latency needs this much (decayed) sample weight before it is compared with anything. */
export const LATENCY_MIN_SAMPLES = 2
/** The baseline needs more history than the recent value before it is trusted. */
export const BASELINE_MIN_SAMPLES = 5
/** Penalty per unit of "times slower" than the peers' median, and than the route's own baseline. */
export const LATENCY_PEER_SLOPE = 0.5
export const LATENCY_BASELINE_SLOPE = 0.5

/** Token-aware latency: divided by the request's work, 1 + prompt / PROMPT + completion / COMPLETION. */
export const PROMPT_TOKENS_PER_UNIT = 4_000
export const COMPLETION_TOKENS_PER_UNIT = 100

/** Utilisation (load / fair share of the direction) above 1 is penalised, reaching 1 at 3x fair share. */
export const UTILISATION_FREE = 1
export const UTILISATION_FULL_PENALTY = 3

/** How much each part weighs in the combined penalty: errors first, latency second, load third. */
export const ERROR_WEIGHT = 1
export const LATENCY_WEIGHT = 0.5
export const UTILISATION_WEIGHT = 0.15

/** healthy -> degraded at the first signs of trouble. */
export const DEGRADE_ERROR_RATE = 0.1
export const DEGRADE_LATENCY_PENALTY = 0.5
/** degraded -> healthy once clearly better again (hysteresis, so a route does not flap). */
export const HEALTHY_ERROR_RATE = 0.05
export const HEALTHY_LATENCY_PENALTY = 0.25
/** -> failed at this decayed error rate, or this rate within one cycle with at least FAIL_CYCLE_MIN_FAILURES failures. */
export const FAIL_ERROR_RATE = 0.5
export const FAIL_CYCLE_MIN_FAILURES = 3
/**
 * -> failed, too, once a route served nothing for this long while at least FAIL_CYCLE_MIN_FAILURES
 * attempts in a row failed, checked on every failed attempt: an outage costs about a second of
 * traffic; a flaky route serves within the second and never trips it.
 */
export const FAIL_SUSTAINED_MS = 1_000

/** Recovering -> healthy after this many clean requests in a row ... */
export const RECOVERY_CLEAN_REQUESTS = 5
/** ... spread over at least this long, so a burst does not prove a route. */
export const RECOVERY_MIN_MS = 10_000
/** Recovering -> failed again after this many failures during the recovery. */
export const RECOVERY_MAX_FAILURES = 2
/**
 * A recovering route starts at this fraction of the scale, and its provider at this fraction of its
 * recovered share, both ramping to full (issue 36, item 8): gradual, but enough to prove itself in seconds.
 */
export const RECOVERY_START = 0.25
/** A recovering route this node sent nothing for this long is due a request: the next that could use it goes there first. */
export const RECOVERY_PROBE_IDLE_MS = 2_000

/** A provider's share of requests naming none goes with (score / WEIGHT_MAX) to this power (0.8 -> 0.17x, 0.5 -> 0.004x). */
export const DIRECTION_SHARPNESS = 8
/** ... but every provider not failed keeps at least this share, to keep being measured (reference: "minimum traffic"). */
export const DIRECTION_MIN_SHARE = 0.02
/** A pick within this many points of the best score is logged as "the best"; below, as a smaller share. */
export const DIRECTION_TIE_MARGIN = 5

/** A model's selection table not used for this many recomputes is dropped (keys with models "*" serve any name). */
export const TABLE_IDLE_CYCLES = 12
/** At most this many models' tables are kept: a flood of made-up model names cannot grow memory without bound. */
export const MAX_CACHED_TABLES = 1_000
