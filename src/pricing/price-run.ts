/**
 * Prices an agent run from its model and token counts (DESIGN §4 "Agent cost"): the USD cost
 * comes from the catalogue of @pydantic/genai-prices (./catalogue.ts), then is converted into
 * the organisation currency (org rate, else the shipped reference table).
 */
import { CATALOGUE, lookupModel, priceTokens } from './catalogue.js';
import { snapUsd, toMicrosExact } from './exact-micros.js';
import { REFERENCE_RATES_DATE, referenceUsdRate } from './reference-rates.js';

export { CATALOGUE };

export interface RunPricingInput {
  model: string;
  tokensIn: number; // integer >= 0
  tokensOut: number; // integer >= 0
  at: Date; // occurred_at of the event: prices as of that time
  currency: string; // organisation currency, ISO 4217 e.g. 'EUR'
  usdExchangeRate: number | null; // org override: units of `currency` per 1 USD
}
export interface RunPricing {
  agentCostMicros: number; // integer micro-units (1e-6) of the org currency, rounded half up
  pricing: {
    provider: string; // matched provider id
    model: string; // matched model id (the catalogue's)
    usd: number; // USD amount computed by genai-prices
    currency: string;
    exchange_rate: number; // USD -> currency rate used (1 for USD)
    exchange_rate_source: 'organization' | 'reference' | 'identity';
    exchange_rate_date: string | null; // YYYY-MM-DD of the reference table; null for organization/identity
    catalogue: string; // e.g. '@pydantic/genai-prices@0.1.8'
  };
}

// Longer strings are no model name; refusing them also bounds the lookup cache's memory.
const MAX_MODEL_LENGTH = 256;

interface Exchange {
  currency: string;
  rate: number;
  source: RunPricing['pricing']['exchange_rate_source'];
  date: string | null;
}

function exchangeFor(currency: string, orgRate: number | null): Exchange | null {
  const code = currency.trim().toUpperCase();
  // A USD→USD rate other than 1 is meaningless, so an org override is ignored for USD.
  if (code === 'USD') return { currency: code, rate: 1, source: 'identity', date: null };
  // A non-positive or non-finite override is unusable (it would fake a cost of 0): treated as unset.
  if (orgRate !== null && Number.isFinite(orgRate) && orgRate > 0) {
    return { currency: code, rate: orgRate, source: 'organization', date: null };
  }
  const rate = referenceUsdRate(code);
  return rate === null ? null : { currency: code, rate, source: 'reference', date: REFERENCE_RATES_DATE };
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/** The run's cost in the org currency, or null when it cannot be priced. Never throws. */
export function priceRun(input: RunPricingInput): RunPricing | null {
  try {
    return price(input);
  } catch {
    // Malformed input or catalogue data the library rejects: no cost rather than a failed track.
    return null;
  }
}

function price(input: RunPricingInput): RunPricing | null {
  const { model, tokensIn, tokensOut, at } = input;
  if (typeof model !== 'string' || !isCount(tokensIn) || !isCount(tokensOut)) return null;
  if (!(at instanceof Date) || Number.isNaN(at.getTime()) || typeof input.currency !== 'string') return null;
  const key = model.trim().toLowerCase();
  if (key === '' || key.length > MAX_MODEL_LENGTH) return null;
  const match = lookupModel(key);
  if (!match) return null;
  const fx = exchangeFor(input.currency, input.usdExchangeRate);
  if (!fx) return null;

  const result = priceTokens(match, tokensIn, tokensOut, at);
  // A model priced only per request, page or second cannot be priced from tokens: a total
  // of 0 there would be a fake cost, not a computed one.
  if (
    !result ||
    (result.model_price.input_mtok === undefined && result.model_price.output_mtok === undefined)
  ) {
    return null;
  }
  const agentCostMicros = toMicrosExact(result.total_price, fx.rate);
  if (agentCostMicros === null) return null;
  return {
    agentCostMicros,
    pricing: {
      provider: result.provider.id,
      model: result.model.id,
      usd: snapUsd(result.total_price),
      currency: fx.currency,
      exchange_rate: fx.rate,
      exchange_rate_source: fx.source,
      exchange_rate_date: fx.date,
      catalogue: CATALOGUE,
    },
  };
}
