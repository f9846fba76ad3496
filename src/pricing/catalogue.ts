/**
 * Model lookup in the catalogue bundled with @pydantic/genai-prices, memoised, and the one
 * call into its calcPrice. Only src/pricing talks to genai-prices.
 *
 * No network: genai-prices only fetches when someone calls its `updatePrices()` with a
 * fetching storage factory (there is no auto-update by default); we never call it, so
 * calcPrice always uses the data bundled in the pinned package.
 */
import {
  calcPrice,
  findProvider,
  type ModelInfo,
  type ModelPrice,
  type PriceCalculation,
  type PriceOptions,
  type Provider,
} from '@pydantic/genai-prices';

/** Pinned in package.json; a test fails if node_modules holds another version. */
export const CATALOGUE = '@pydantic/genai-prices@0.1.8';

/** A resolved model: the name to pass to calcPrice and a one-model provider matching it by equality. */
interface Match {
  name: string;
  provider: Provider;
}

// Resolution scans providers and models with regexes, so it runs once per distinct
// model string; unknown models are cached too. Bounded because model strings come from
// clients: the oldest entry goes first.
const MAX_CACHED_MODELS = 5_000;
const matches = new Map<string, Match | null>();

/** `key` is trimmed and lower-cased. */
export function lookupModel(key: string): Match | null {
  const cached = matches.get(key);
  if (cached !== undefined) return cached;
  const found = resolve(key);
  if (matches.size >= MAX_CACHED_MODELS) {
    const oldest = matches.keys().next();
    if (!oldest.done) matches.delete(oldest.value);
  }
  matches.set(key, found);
  return found;
}

/** USD price of a run, by genai-prices, as of `at` (prices may change by date or time of day). */
export function priceTokens(
  match: Match,
  tokensIn: number,
  tokensOut: number,
  at: Date,
): PriceCalculation | null {
  const usage = { input_tokens: tokensIn, output_tokens: tokensOut };
  return calcPrice(usage, match.name, { provider: match.provider, timestamp: at });
}

/**
 * 'openai:gpt-4o' or 'openai/gpt-4o' → model gpt-4o of provider openai only. A prefix that is
 * not a provider is part of the model name (Bedrock ids contain ':', OpenRouter ids '/'); so is
 * one that only matches a provider alias (e.g. 'anthropic.claude-…-v1:0' matches Anthropic's
 * "contains anthropic") when that provider has no such model. Without a prefix the library
 * picks the provider from the model name.
 */
function resolve(key: string): Match | null {
  const sep = key.search(/[:/]/);
  if (sep > 0 && sep < key.length - 1) {
    const prefix = key.slice(0, sep);
    const provider = findProvider({ providerId: prefix });
    if (provider) {
      const found = find(key.slice(sep + 1), { providerId: provider.id });
      if (found || provider.id === prefix) return found;
    }
  }
  return find(key, {});
}

function find(name: string, options: PriceOptions): Match | null {
  let probe: PriceCalculation | null;
  try {
    probe = calcPrice({ input_tokens: 0, output_tokens: 0 }, name, options);
  } catch {
    return null; // an entry the library cannot price: cached as unknown, not retried
  }
  if (!probe) return null;
  const { id, name: providerName, api_pattern } = probe.provider;
  // The matched model (possibly from the provider's fallback providers, e.g. azure → openai),
  // re-wrapped so that calcPrice matches it with one string comparison per call.
  const model: ModelInfo = { ...probe.model, match: { equals: name }, prices: runPrices(probe.model.prices) };
  return { name, provider: { id, name: providerName, api_pattern, models: [model] } };
}

// With a usage of only input_tokens and output_tokens, every other unit (cache reads, audio,
// web searches…) has a quantity of 0, and no unit is an ancestor of these two, so keeping only
// these keys gives the same total, and calcPrice's per-call validation is quadratic in the
// number of price keys. `requests` is always 1 in genai-prices, so a
// per-request price stays.
const RUN_PRICE_KEYS = ['input_mtok', 'output_mtok', 'requests_kcount'];

function runPrices(prices: ModelInfo['prices']): ModelInfo['prices'] {
  return Array.isArray(prices)
    ? prices.map((c) => ({ ...c, prices: keepRunKeys(c.prices) }))
    : keepRunKeys(prices);
}

function keepRunKeys(price: ModelPrice): ModelPrice {
  const kept: ModelPrice = {};
  for (const key of RUN_PRICE_KEYS) if (price[key] !== undefined) kept[key] = price[key];
  return kept;
}
