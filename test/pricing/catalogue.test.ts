import { readFileSync } from 'node:fs';
import { calcPrice, findProvider, type MatchLogic } from '@pydantic/genai-prices';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CATALOGUE, priceRun } from '../../src/pricing/price-run.js';

/** A model string the catalogue entry matches exactly, if its match logic has one. */
function exactName(match: MatchLogic): string | undefined {
  if ('equals' in match) return match.equals;
  if ('or' in match) return match.or.map(exactName).find((name) => name !== undefined);
  return undefined;
}

// Every provider id in the bundled data (genai-prices exports no list of them).
const PROVIDERS = (
  'anthropic arcee avian aws azure baseten cerebras cloudflare cohere cursor deepseek doubleword fireworks ' +
  'github-copilot google groq huggingface_cerebras huggingface_fireworks-ai huggingface_groq ' +
  'huggingface_hyperbolic huggingface_nebius huggingface_novita huggingface_nscale huggingface_ovhcloud ' +
  'huggingface_publicai huggingface_sambanova huggingface_together minimax mistral modal moonshotai novita ' +
  'openai openrouter ovhcloud perplexity quicksilverpro together typesafe voyageai x-ai zai zhipuai'
).split(' ');

describe('priceRun against genai-prices itself', () => {
  afterEach(() => vi.restoreAllMocks());

  it('matches calcPrice with the full price table for every catalogue model (trimmed prices are equivalent)', () => {
    let compared = 0;
    for (const providerId of PROVIDERS) {
      for (const model of findProvider({ providerId })?.models ?? []) {
        const name = exactName(model.match);
        if (name === undefined) continue;
        // 300k input tokens crosses the long-context tiers; two dates and times cover constraints.
        for (const at of [new Date('2024-06-01T03:00:00Z'), new Date('2026-11-22T10:00:00Z')]) {
          const usage = { input_tokens: 300_000, output_tokens: 567 };
          const expected = calcPrice(usage, name, { providerId, timestamp: at });
          const got = priceRun({
            model: `${providerId}:${name}`,
            tokensIn: usage.input_tokens,
            tokensOut: usage.output_tokens,
            at,
            currency: 'USD',
            usdExchangeRate: null,
          });
          if (got === null) {
            // Only a model without per-token prices may be refused.
            const p = expected?.model_price;
            expect(p === undefined || (p['input_mtok'] === undefined && p['output_mtok'] === undefined)).toBe(
              true,
            );
            continue;
          }
          expect(got.pricing.usd).toBeCloseTo(expected?.total_price ?? NaN, 9);
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });

  it('never touches the network', () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    const at = new Date('2026-11-20T12:00:00.000Z');
    for (const model of ['gpt-4o', 'claude-sonnet-4-0', 'unknown-model-for-fetch-check']) {
      priceRun({ model, tokensIn: 10, tokensOut: 10, at, currency: 'EUR', usdExchangeRate: null });
    }
    expect(fetchSpy).not.toHaveBeenCalled();
  });

  it('names the installed catalogue version', () => {
    const url = new URL('../../node_modules/@pydantic/genai-prices/package.json', import.meta.url);
    const { version } = JSON.parse(readFileSync(url, 'utf8')) as { version: string };
    expect(CATALOGUE).toBe(`@pydantic/genai-prices@${version}`);
  });
});
