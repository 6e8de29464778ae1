import { describe, expect, it } from 'vitest'
import { SWITCH_NAMES } from '@switchboard/routing'
import { extraSettings, settingsBody, SWITCHES, switchValue } from './settings.js'

describe('settings', () => {
  it('sends all five switches as they are (a missing or odd one off), plus the change', () => {
    const config = { direction_selection_enabled: true, route_selection_enabled: 'yes', append_fallbacks_to_pinned: false, reroute_failed_directions: true, history_enabled: true, pending: false }
    expect(settingsBody(config, 'prune_failed_fallbacks', true)).toEqual({
      direction_selection_enabled: true, route_selection_enabled: false, append_fallbacks_to_pinned: false, reroute_failed_directions: true, prune_failed_fallbacks: true,
    })
    expect(settingsBody(config, 'history_retention_days', 30)).toMatchObject({ history_retention_days: 30, prune_failed_fallbacks: false })
    expect(SWITCHES.map(([field]) => field)).toEqual([...SWITCH_NAMES])
  })

  it('lists the settings beyond the five, not pending', () => {
    expect(extraSettings({ direction_selection_enabled: true, history_enabled: false, history_retention_days: 7, pending: true })).toEqual([['history_enabled', false], ['history_retention_days', 7]])
    expect(extraSettings(undefined)).toEqual([])
    expect(extraSettings({})).toEqual([])
  })

  it('reads a switch in effect as on, off or —', () => {
    expect([true, false, undefined, null, 'on'].map(switchValue)).toEqual(['on', 'off', '—', '—', '—'])
  })
})
