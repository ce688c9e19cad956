import type { Db } from "./sql.js";

/** A stored plugin revision: the manifest as canonical JSON, time in ms (UTC). */
export interface PluginRow {
  name: string;
  revision: number;
  manifest: string;
  registered_at: number;
}

/**
 * The statements on `plugins` (each plugin's current revision) and `plugin_revisions` (every
 * revision registered). Reads may run anywhere; writes only inside a committer unit, with the
 * event that records the revision.
 */
export interface PluginStatements {
  /** Every plugin's current revision, by name. */
  all(): PluginRow[];
  /** One plugin's current revision, or undefined when it was never registered. */
  get(name: string): PluginRow | undefined;
  /** Records a new revision: it becomes the plugin's current one, and joins its history (throws when that revision is in it already). */
  save(row: PluginRow): void;
}

/** The plugins and plugin_revisions tables' statements on `db`. */
export function pluginStatements(db: Db): PluginStatements {
  const all = db.prepare("SELECT * FROM plugins ORDER BY name");
  const one = db.prepare("SELECT * FROM plugins WHERE name = ?");
  const upsert = db.prepare(
    `INSERT INTO plugins (name, revision, manifest, registered_at) VALUES (@name, @revision, @manifest, @registered_at)
     ON CONFLICT (name) DO UPDATE SET revision = excluded.revision, manifest = excluded.manifest, registered_at = excluded.registered_at`,
  );
  const history = db.prepare("INSERT INTO plugin_revisions (name, revision, manifest, registered_at) VALUES (@name, @revision, @manifest, @registered_at)");
  return {
    all: () => all.all() as PluginRow[],
    get: (name: string) => one.get(name) as PluginRow | undefined,
    save(row: PluginRow): void {
      upsert.run(row);
      history.run(row);
    },
  };
}
