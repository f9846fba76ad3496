import type { Actor } from './accounts/actor.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Connections, DbOrTrx, Engine } from './storage/db.js';
import type { Organization } from './orgs/organization-record.js';

/** What every verb gets: storage, time and configuration. */
export interface ServiceCtx {
  db: DbOrTrx;
  engine: Engine;
  clock: Clock;
  config: Config;
  /**
   * The open storage `db` comes from, whose other connections a verb may take (storage/db.ts
   * readDb, writeDb, trackDb); absent, the verb does all its work on `db`.
   */
  storage?: Connections;
}

/** A verb acting for one organisation; `actorKeyId` is null when the CLI or a person acts. */
export interface OrgCtx extends ServiceCtx {
  org: Organization;
  actorKeyId: string | null;
  /**
   * Who acts: a person with their role, an API key, or the operator (accounts/authorize.ts).
   * Absent: the operator when `actorKeyId` is null, else an admin key (accounts/authorize.ts actorOf).
   */
  actor?: Actor;
}
