import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, decodeJwt, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';

// A real OpenID Provider (oidc-provider, certified) in the test process on 127.0.0.1 at a random
// port, with its own login form: people are listed by e-mail, each with a password. Tests can
// rewrite the ID token the token endpoint answers (re-signed with the provider's own key), to
// see each check of the relying party refuse it.

export interface ProviderPerson {
  email: string;
  password: string;
  name?: string;
  /** Absent: the claim is left out. */
  emailVerified?: boolean;
}

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Set to rewrite the next ID tokens' claims (then re-signed); null to stop. */
  tamper: ((claims: JWTPayload) => JWTPayload) | null;
  /** The path of every request the provider received. */
  paths: string[];
  /** How many authorization requests carried PKCE S256 and a nonce. */
  checkedRequests: { pkce: string | null; nonce: string | null; scope: string | null }[];
  close(): Promise<void>;
}

const KID = 'test-key-1';

function loginForm(uid: string, clientId: string, error: string | null): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test identity provider</title></head>
<body><main><h1>Test identity provider</h1><p>Sign in to continue to <strong>${clientId}</strong>.</p>
${error ? `<p role="alert">${error}</p>` : ''}
<form method="post" action="/interaction/${uid}/login">
<label for="email">E-mail</label> <input id="email" name="email" type="email" autocomplete="off">
<label for="password">Password</label> <input id="password" name="password" type="password">
<button type="submit">Sign in at the provider</button></form></main></body></html>`;
}

async function formOf(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export async function startProvider({
  redirectUri,
  people,
  clientId = 'tally-test-client',
  clientSecret = 'tally-test-client-secret-0123456789',
  emailInIdToken = false,
}: {
  redirectUri: string;
  people: ProviderPerson[];
  clientId?: string;
  clientSecret?: string;
  /** Claims of the scopes in the ID token too (by default, as the spec has it, only at userinfo). */
  emailInIdToken?: boolean;
}): Promise<TestProvider> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: KID, use: 'sig', alg: 'RS256' };

  let handler: (req: IncomingMessage, res: ServerResponse) => void = () => undefined;
  const server: Server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const byEmail = new Map(people.map((p) => [p.email.toLowerCase(), p]));
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
      {
        client_id: 'another-client',
        client_secret: 'another-client-secret-0123456789',
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    jwks: { keys: [jwk] },
    conformIdTokenClaims: !emailInIdToken,
    cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, sub) => {
      const person = byEmail.get(sub);
      if (!person) return undefined;
      return {
        accountId: sub,
        claims: () => ({
          sub,
          email: person.email,
          ...(person.emailVerified === undefined ? {} : { email_verified: person.emailVerified }),
          ...(person.name === undefined ? {} : { name: person.name }),
        }),
      };
    },
  });

  const state: TestProvider = {
    issuer,
    clientId,
    clientSecret,
    tamper: null,
    paths: [],
    checkedRequests: [],
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };

  // Records what each authorization request asked for; rewrites ID tokens when told to.
  provider.use(async (ctx, next) => {
    state.paths.push(ctx.path);
    if (ctx.path === '/auth' && ctx.method === 'GET') {
      state.checkedRequests.push({
        pkce: ctx.query.code_challenge_method === 'S256' ? String(ctx.query.code_challenge) : null,
        nonce: typeof ctx.query.nonce === 'string' ? ctx.query.nonce : null,
        scope: typeof ctx.query.scope === 'string' ? ctx.query.scope : null,
      });
    }
    await next();
    const body = ctx.body as { id_token?: string } | undefined;
    if (ctx.path === '/token' && state.tamper && body && typeof body.id_token === 'string') {
      const claims = state.tamper(decodeJwt(body.id_token));
      body.id_token = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: KID })
        .sign(privateKey);
    }
  });

  const callback = provider.callback();
  handler = (req, res) => {
    const match = /^\/interaction\/([^/?]+)(\/login)?/.exec(req.url ?? '');
    if (!match) {
      callback(req, res);
      return;
    }
    void (async () => {
      try {
        const details = await provider.interactionDetails(req, res);
        const shown = String(details.params.client_id);
        if (req.method === 'GET') {
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
          res.end(loginForm(details.uid, shown, null));
          return;
        }
        const form = await formOf(req);
        const email = (form.get('email') ?? '').toLowerCase();
        const person = byEmail.get(email);
        if (!person || person.password !== form.get('password')) {
          res.writeHead(401, { 'content-type': 'text/html; charset=utf-8' });
          res.end(loginForm(details.uid, shown, 'Wrong e-mail or password.'));
          return;
        }
        const grant = new provider.Grant({ accountId: email, clientId: shown });
        grant.addOIDCScope(String(details.params.scope));
        const grantId = await grant.save();
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId: email }, consent: { grantId } },
          { mergeWithLastSubmission: false },
        );
      } catch (error) {
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.end(String(error));
      }
    })();
  };
  return state;
}

/** The cookies of one browser, by name (every test server is on 127.0.0.1, as a browser shares them). */
export class CookieJar {
  readonly cookies = new Map<string, string>();

  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair?.indexOf('=') ?? -1;
      if (!pair || eq <= 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/**
 * A browser at the provider: follows the authorization URL to the login form, signs in as
 * `email`, and follows redirects until the provider sends it to `redirectUri`, whose URL it
 * returns (with code, state and iss in its query).
 */
export async function signInAtProvider({
  authorizationUrl,
  redirectUri,
  email,
  password,
  jar = new CookieJar(),
}: {
  authorizationUrl: string;
  redirectUri: string;
  email: string;
  password: string;
  jar?: CookieJar;
}): Promise<URL> {
  let url = new URL(authorizationUrl);
  for (let hop = 0; hop < 10; hop++) {
    const login = /^\/interaction\/([^/]+)$/.test(url.pathname);
    if (login) url = new URL(`${url.pathname}/login`, url);
    const res = await fetch(
      url,
      login
        ? {
            method: 'POST',
            redirect: 'manual',
            body: new URLSearchParams({ email, password }).toString(),
            headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
          }
        : { redirect: 'manual', headers: { cookie: jar.header() } },
    );
    jar.take(res);
    const location = res.headers.get('location');
    if (location === null) {
      throw new Error(
        `the provider answered ${res.status} at ${url.href}: ${(await res.text()).slice(0, 300)}`,
      );
    }
    const next = new URL(location, url);
    if (next.href.startsWith(redirectUri)) return next;
    url = next;
  }
  throw new Error('the provider redirected too often');
}
