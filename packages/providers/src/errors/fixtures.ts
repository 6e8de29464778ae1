/**
 * Recorded provider error answers, one table per provider family, with the
 * classification each must get. The classify tests run one case per fixture.
 */
import { ANTHROPIC_FIXTURES } from './fixtures/anthropic.ts'
import { BEDROCK_FIXTURES } from './fixtures/bedrock.ts'
import { GROQ_FIXTURES } from './fixtures/groq.ts'
import { MISTRAL_FIXTURES } from './fixtures/mistral.ts'
import { OPENROUTER_FIXTURES } from './fixtures/openrouter.ts'
import { PLAIN_FIXTURES } from './fixtures/plain.ts'
import type { ErrorFixture } from './fixtures/fixture.ts'
import { GOOGLE_FIXTURES } from './fixtures/google.ts'
import { AZURE_FIXTURES } from './fixtures/azure.ts'
import { OPENAI_FIXTURES } from './fixtures/openai.ts'
import { VLLM_FIXTURES } from './fixtures/vllm.ts'

export { FIXTURE_NOW, type ErrorFixture } from './fixtures/fixture.ts'

/** Every recorded error answer. */
export const ERROR_FIXTURES: readonly ErrorFixture[] = [
  ...OPENAI_FIXTURES,
  ...AZURE_FIXTURES,
  ...ANTHROPIC_FIXTURES,
  ...GOOGLE_FIXTURES,
  ...BEDROCK_FIXTURES,
  ...GROQ_FIXTURES,
  ...MISTRAL_FIXTURES,
  ...OPENROUTER_FIXTURES,
  ...VLLM_FIXTURES,
  ...PLAIN_FIXTURES,
]
