import type { Db } from "./sql.js";

/** A stored plugin revision: the manifest as canonical JSON, time in ms (UTC). */
export interface PluginRow {
  name: string;
  revision: number;
  manifest: string;
  registered_at: number;
}

/** The statements on `plugins` and `plugin_revisions`, one function each. */
export function pluginStatements(db: Db) {
  const all = db.prepare("SELECT * FROM plugins ORDER BY name");
  const one = db.prepare("SELECT * FROM plugins WHERE name = ?");
  const upsert = db.prepare(
    `INSERT INTO plugins (name, revision, manifest, registered_at) VALUES (@name, @revision, @manifest, @registered_at)
     ON CONFLICT (name) DO UPDATE SET revision = excluded.revision, manifest = excluded.manifest, registered_at = excluded.registered_at`,
  );
  const history = db.prepare(
    "INSERT INTO plugin_revisions (name, revision, manifest, registered_at) VALUES (@name, @revision, @manifest, @registered_at)",
  );
  return {
    /** Every plugin's current revision. */
    all: () => all.all() as PluginRow[],
    /** One plugin's current revision, or undefined. */
    get: (name: string) => one.get(name) as PluginRow | undefined,
    /**
     * Records a new revision (in the committer's transaction): the current
     * row and the history row.
     */
    save(row: PluginRow): void {
      upsert.run(row);
      history.run(row);
    },
  };
}
