import * as client from 'openid-client';
import type { ServiceCtx } from '../context.js';
import { AppError } from '../errors.js';
import { issuerIsLoopbackHttp, type SsoConnection } from './connections.js';

// The OpenID Connect client (openid-client, a certified relying party) for one connection:
// its provider's metadata is discovered once and kept a while per connection version.

/** How long a provider's discovered metadata is used before it is read again. */
const METADATA_TTL_MS = 10 * 60_000;
/** Seconds a request to the provider (discovery, token, userinfo) may take. */
const PROVIDER_TIMEOUT_SECONDS = 10;
const CACHE_LIMIT = 200;

interface Cached {
  server: client.ServerMetadata;
  /** The connection version it was read for: a changed connection is discovered again. */
  updatedAt: number;
  fetchedAt: number;
}

const cache = new Map<string, Cached>();

/** The provider could not be discovered; the message says why. */
export class ProviderUnavailable extends Error {}

function insecureOptions(connection: SsoConnection) {
  return issuerIsLoopbackHttp(connection.issuer) ? { execute: [client.allowInsecureRequests] } : {};
}

/**
 * The openid-client configuration of `connection`. The library's clock follows `ctx.clock`
 * (its clockSkew), so that expiry checks use the service's time, as every verb does. The
 * client authenticates at the token endpoint with client_secret_post.
 */
export async function providerConfig(
  ctx: ServiceCtx,
  connection: SsoConnection,
): Promise<client.Configuration> {
  const now = ctx.clock.now().getTime();
  const metadata = {
    client_secret: connection.clientSecret,
    [client.clockSkew]: Math.round((now - Date.now()) / 1000),
  };
  const auth = client.ClientSecretPost(connection.clientSecret);
  const hit = cache.get(connection.orgId);
  let config: client.Configuration;
  if (hit && hit.updatedAt === connection.updatedAt && now - hit.fetchedAt < METADATA_TTL_MS) {
    config = new client.Configuration(hit.server, connection.clientId, metadata, auth);
    if (issuerIsLoopbackHttp(connection.issuer)) client.allowInsecureRequests(config);
  } else {
    try {
      config = await client.discovery(new URL(connection.issuer), connection.clientId, metadata, auth, {
        timeout: PROVIDER_TIMEOUT_SECONDS,
        ...insecureOptions(connection),
      });
    } catch (error) {
      throw new ProviderUnavailable(
        `The identity provider ${connection.issuer} could not be discovered: ${(error as Error).message}`,
      );
    }
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value ?? '');
    cache.set(connection.orgId, {
      server: config.serverMetadata(),
      updatedAt: connection.updatedAt,
      fetchedAt: now,
    });
  }
  config.timeout = PROVIDER_TIMEOUT_SECONDS;
  return config;
}

/** Forgets every discovered provider (tests; a changed connection is re-read by itself). */
export function forgetProviders(): void {
  cache.clear();
}

/** The AppError a page shows when the provider cannot be reached. */
export function unavailable(error: ProviderUnavailable): AppError {
  return new AppError('service_unavailable', error.message);
}
