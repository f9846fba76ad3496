import { findProvider, type ModelInfo, type ModelPrice } from '@pydantic/genai-prices';
import { describe, expect, it } from 'vitest';
import { CATALOGUE, priceRun, type RunPricingInput } from '../../src/pricing/price-run.js';
import { REFERENCE_RATES_DATE, REFERENCE_USD_RATES } from '../../src/pricing/reference-rates.js';

const AT = new Date('2026-11-22T10:00:00.000Z');
const run = (over: Partial<RunPricingInput>): RunPricingInput => ({
  model: 'gpt-4o',
  tokensIn: 1234,
  tokensOut: 567,
  at: AT,
  currency: 'USD',
  usdExchangeRate: null,
  ...over,
});

/** A model's entry in the library's own data, read for expected values instead of magic numbers. */
function catalogueModel(providerId: string, modelId: string): ModelInfo {
  const model = findProvider({ providerId })?.models.find((m) => m.id === modelId);
  if (!model) throw new Error(`${providerId}/${modelId} not in the catalogue`);
  return model;
}
function mtok(prices: ModelPrice, key: 'input_mtok' | 'output_mtok'): number {
  const price = prices[key];
  if (typeof price !== 'number') throw new Error(`${key} is not a flat price`);
  return price;
}
/** Per-Mtok prices × tokens = USD micro-units, exactly, for the catalogue prices used here. */
const usdMicros = (prices: ModelPrice, tokensIn: number, tokensOut: number): number =>
  Math.round(mtok(prices, 'input_mtok') * tokensIn + mtok(prices, 'output_mtok') * tokensOut);

describe('priceRun: model matching', () => {
  it('prices gpt-4o, openai/gpt-4o and openai:gpt-4o (any case) the same', () => {
    const results = ['gpt-4o', 'openai/gpt-4o', 'openai:gpt-4o', ' OpenAI:GPT-4o '].map((model) =>
      priceRun(run({ model })),
    );
    for (const result of results) expect(result).toEqual(results[0]);
    expect(results[0]?.pricing).toMatchObject({ provider: 'openai', model: 'gpt-4o', catalogue: CATALOGUE });
  });

  it('equals the catalogue per-million-token prices × tokens', () => {
    const prices = catalogueModel('openai', 'gpt-4o').prices;
    if (Array.isArray(prices)) throw new Error('gpt-4o is expected to have a single price');
    const micros = usdMicros(prices, 1234, 567);
    const result = priceRun(run({}));
    expect(result?.agentCostMicros).toBe(micros);
    expect(result?.pricing.usd).toBe(micros / 1e6);
  });

  it('respects a provider prefix, including the library fallback providers', () => {
    expect(priceRun(run({ model: 'anthropic:gpt-4o' }))).toBeNull();
    expect(priceRun(run({ model: 'openai/claude-sonnet-4-0' }))).toBeNull();
    expect(priceRun(run({ model: 'anthropic/claude-sonnet-4-0' }))?.pricing.provider).toBe('anthropic');
    // Azure lists no gpt-4o of its own; genai-prices falls back to OpenAI's entry.
    expect(priceRun(run({ model: 'azure:gpt-4o' }))?.pricing).toMatchObject({
      provider: 'azure',
      model: 'gpt-4o',
    });
  });

  it('returns null for an unknown model or provider, never a cost of 0', () => {
    for (const model of [
      'no-such-model',
      'foo:gpt-4o',
      'openai:',
      ':gpt-4o',
      '',
      '   ',
      'x'.repeat(10_000),
    ]) {
      expect(priceRun(run({ model }))).toBeNull();
    }
  });

  it('returns null for a model the catalogue does not price per token', () => {
    expect(priceRun(run({ model: 'mistral:mistral-ocr-latest' }))).toBeNull();
  });

  it('keeps working past the lookup cache bound', () => {
    for (let i = 0; i < 6_000; i++) expect(priceRun(run({ model: `unknown-${i}` }))).toBeNull();
    expect(priceRun(run({}))).not.toBeNull();
  });
});

describe('priceRun: currency', () => {
  it('USD organisation: identity rate 1', () => {
    expect(priceRun(run({}))?.pricing).toMatchObject({
      currency: 'USD',
      exchange_rate: 1,
      exchange_rate_source: 'identity',
      exchange_rate_date: null,
    });
    // A USD→USD override other than 1 is meaningless and ignored.
    expect(priceRun(run({ usdExchangeRate: 1.2 }))?.pricing.exchange_rate_source).toBe('identity');
  });

  it('the organisation rate wins over the reference table, rounded half up exactly', () => {
    // 6 in + 7 out: genai-prices gives $0.00008499999999999999, so a naive
    // Math.round(usd × 0.9 × 1e6) = round(76.49999999999999) = 76; the exact 76.5 rounds to 77.
    for (const [tokensIn, tokensOut] of [
      [1234, 567],
      [6, 7],
    ] as const) {
      const usd = priceRun(run({ tokensIn, tokensOut }))?.agentCostMicros ?? NaN;
      const eur = priceRun(run({ tokensIn, tokensOut, currency: 'EUR', usdExchangeRate: 0.9 }));
      expect(eur?.pricing).toMatchObject({
        exchange_rate: 0.9,
        exchange_rate_source: 'organization',
        exchange_rate_date: null,
      });
      // usd × 9 is an integer, so / 10 is exact in binary when it ends in .5: half up by hand.
      expect(eur?.agentCostMicros).toBe(Math.floor((usd * 9) / 10 + 0.5));
    }
  });

  it('falls back to the dated reference table', () => {
    const eur = priceRun(run({ currency: 'EUR' }));
    expect(eur?.pricing).toMatchObject({
      exchange_rate: REFERENCE_USD_RATES['EUR'],
      exchange_rate_source: 'reference',
      exchange_rate_date: REFERENCE_RATES_DATE,
    });
    expect(REFERENCE_RATES_DATE).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    for (const code of [
      'EUR',
      'GBP',
      'USD',
      'CHF',
      'JPY',
      'CAD',
      'AUD',
      'SEK',
      'NOK',
      'DKK',
      'PLN',
      'INR',
      'BRL',
    ]) {
      expect(REFERENCE_USD_RATES[code]).toBeGreaterThan(0);
    }
    // An unusable override (0, negative, NaN) is treated as unset rather than faking a cost of 0.
    for (const usdExchangeRate of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(priceRun(run({ currency: 'EUR', usdExchangeRate }))?.pricing.exchange_rate_source).toBe(
        'reference',
      );
    }
  });

  it('returns null for a currency with no reference rate and no organisation rate', () => {
    expect(priceRun(run({ currency: 'XAF' }))).toBeNull();
    expect(priceRun(run({ currency: 'constructor' }))).toBeNull();
    expect(priceRun(run({ currency: 'XAF', usdExchangeRate: 600 }))?.pricing.exchange_rate_source).toBe(
      'organization',
    );
  });
});

describe('priceRun: edge cases', () => {
  it('zero tokens is a computed cost of 0', () => {
    const result = priceRun(run({ tokensIn: 0, tokensOut: 0, currency: 'EUR' }));
    expect(result?.agentCostMicros).toBe(0);
    expect(result?.pricing.exchange_rate_source).toBe('reference');
  });

  it('never throws on weird input', () => {
    const weird: Partial<RunPricingInput>[] = [
      { tokensIn: -1 },
      { tokensOut: 1.5 },
      { tokensIn: Number.NaN },
      { tokensOut: Number.POSITIVE_INFINITY },
      { tokensIn: Number.MAX_SAFE_INTEGER }, // cost beyond a safe integer of micro-units
      { at: new Date('not a date') },
    ];
    for (const over of weird) expect(priceRun(run(over))).toBeNull();
  });

  it('uses the prices in force at `at` (start dates and time of day)', () => {
    const o3 = catalogueModel('openai', 'o3').prices;
    if (!Array.isArray(o3) || !o3[0] || !o3[1]) throw new Error('o3 is expected to have dated prices');
    const start = o3[1].constraint?.type === 'start_date' ? o3[1].constraint.start_date : '';
    const before = new Date(Date.parse(start) - 86_400_000);
    expect(priceRun(run({ model: 'o3', at: before }))?.agentCostMicros).toBe(
      usdMicros(o3[0].prices, 1234, 567),
    );
    expect(priceRun(run({ model: 'o3', at: new Date(start) }))?.agentCostMicros).toBe(
      usdMicros(o3[1].prices, 1234, 567),
    );
    expect(priceRun(run({ model: 'o3', at: new Date('2001-01-01T00:00:00Z') }))).not.toBeNull();

    // DeepSeek: standard price 00:30–16:30 UTC, discounted otherwise.
    const ds = catalogueModel('deepseek', 'deepseek-chat').prices;
    if (!Array.isArray(ds) || !ds[0] || !ds[1])
      throw new Error('deepseek-chat is expected to have time-of-day prices');
    const day = priceRun(run({ model: 'deepseek-chat', at: new Date('2026-11-22T10:00:00Z') }));
    const night = priceRun(run({ model: 'deepseek-chat', at: new Date('2026-11-22T20:00:00Z') }));
    expect(day?.agentCostMicros).toBe(usdMicros(ds[1].prices, 1234, 567));
    expect(night?.agentCostMicros).toBe(usdMicros(ds[0].prices, 1234, 567));
  });
});
