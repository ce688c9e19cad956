import type { PluginManifest } from "@chronolog/sdk/gen/chronolog/v1/plugin_pb";
import type { ActionEntry } from "../actions/declaration.js";
import type { CollectionEntry } from "../collections/declaration.js";
import { CollectionIndex, collectionConflicts } from "../collections/declared.js";
import { fail } from "../errors.js";
import type { Committer, Tx } from "../store/committer.js";
import type { Db } from "../store/sql.js";
import { pluginStatements } from "../store/plugins.js";
import { scheduleViolations } from "../time/declared.js";
import { withEventPathKeys, type RetentionRule } from "../log/retention-rules.js";
import { compileManifest, manifestFromJson, type CompiledManifest, type EventTypeEntry, type RegisteredPlugin } from "./manifest.js";

/**
 * The plugins the owner knows, and the index of declared event types built
 * from them. Manifests persist in SQLite and are loaded at start; a
 * changed manifest is recorded as a new revision.
 */
export class PluginRegistry {
  private readonly plugins = new Map<string, RegisteredPlugin>();
  private eventTypes = new Map<string, EventTypeEntry>();
  private collections = CollectionIndex.build([]);
  private actions = new Map<string, ActionEntry>();
  private retention = new Map<string, RetentionRule[]>();
  private readonly statements;
  private readonly listeners: (() => void)[] = [];
  private readonly inCommit: ((tx: Tx, plugins: RegisteredPlugin[]) => void)[] = [];
  private registering: Promise<unknown> = Promise.resolve();

  /** Without a `committer` it only reads and checks ({@link check}): a standby's view of the plugins. */
  constructor(
    db: Db,
    private readonly committer?: Committer,
  ) {
    this.statements = pluginStatements(db);
    this.load();
  }

  /**
   * Reads the stored plugins again: a standby's view (which has no {@link committer}) after the
   * leader registered one. Tells no listener.
   */
  load(): void {
    this.plugins.clear();
    for (const row of this.statements.all()) {
      const manifest = manifestFromJson(JSON.parse(row.manifest), `stored plugin ${row.name}`);
      withEventPathKeys(manifest.retention);
      const compiled = compileManifest(manifest, { stored: true });
      this.plugins.set(row.name, { compiled, revision: row.revision, registeredAt: row.registered_at });
    }
    this.reindex();
  }

  /** The declaration of an event type, or undefined when nobody declared it. */
  eventType(type: string): EventTypeEntry | undefined {
    return this.eventTypes.get(type);
  }

  /** The declaration of a collection, or undefined when nobody declared it. */
  collection(name: string): CollectionEntry | undefined {
    return this.collections.get(name);
  }

  /** The declaration of an action `plugin.action`, or undefined when nobody declared it. */
  action(name: string): ActionEntry | undefined {
    return this.actions.get(name);
  }

  /** Every declared action. */
  allActions(): Iterable<ActionEntry> {
    return this.actions.values();
  }

  /** The retention rules of the plugin that declares event type `type` (or the collection whose change type it is); empty for others. */
  retentionRules(type: string): RetentionRule[] {
    return this.retention.get(type) ?? [];
  }

  /** Collections whose writes record change events. */
  eventCollections(): string[] {
    return [...this.plugins.values()].flatMap((p) => p.compiled.collections.filter((c) => c.writesEvents).map((c) => c.name));
  }

  /** Plugin `name`'s current manifest, or undefined when none is registered by that name. */
  manifestOf(name: string): PluginManifest | undefined {
    return this.plugins.get(name)?.compiled.manifest;
  }

  /** All plugins, by name. */
  list(): RegisteredPlugin[] {
    return [...this.plugins.values()].sort((a, b) => a.compiled.manifest.name.localeCompare(b.compiled.manifest.name));
  }

  /** One plugin, or NOT_FOUND. */
  get(name: string): RegisteredPlugin {
    return this.plugins.get(name) ?? fail("not_found", `no plugin named ${JSON.stringify(name)}`);
  }

  /**
   * Registers a manifest: checks it (INVALID_ARGUMENT), checks that its event
   * types and collections are not declared by another plugin and that no
   * event type is a collection's change type, and when it differs from the
   * current revision commits a new revision. Resolves once durable.
   */
  async register(manifest: PluginManifest): Promise<{ plugin: RegisteredPlugin; changed: boolean }> {
    // One registration at a time: each one's checks see the result of the one before
    // (an identical manifest registered twice at once makes one revision, not two).
    const run = this.registering.then(() => this.registerNow(manifest));
    this.registering = run.catch(() => undefined);
    return run;
  }

  private async registerNow(manifest: PluginManifest): Promise<{ plugin: RegisteredPlugin; changed: boolean }> {
    const compiled = compileManifest(manifest);
    const name = manifest.name;
    this.checkOwnership(compiled);
    const current = this.plugins.get(name);
    if (current && current.compiled.canonical === compiled.canonical) return { plugin: current, changed: false };
    if (!this.committer) throw new Error("this plugin registry only checks manifests");
    const saved = await this.committer.submit((tx) => {
      const revision = (this.statements.get(name)?.revision ?? 0) + 1;
      this.statements.save({ name, revision, manifest: compiled.canonical, registered_at: tx.now });
      const next = [...[...this.plugins.values()].filter((p) => p.compiled.manifest.name !== name), { compiled, revision, registeredAt: tx.now }];
      for (const work of this.inCommit) work(tx, next);
      return { revision, registeredAt: tx.now };
    });
    const plugin = { compiled, ...saved };
    this.plugins.set(name, plugin);
    this.reindex();
    for (const listener of this.listeners) listener();
    return { plugin, changed: true };
  }

  /**
   * Checks that `manifests` would register one after another on top of the plugins known, as
   * {@link register} checks them (throwing its error), and changes nothing: a standby's plugin
   * folder is checked against the database before it waits, not when it takes over.
   */
  check(manifests: PluginManifest[]): void {
    const known = new Map(this.plugins);
    try {
      for (const manifest of manifests) {
        const compiled = compileManifest(manifest);
        this.checkOwnership(compiled);
        this.plugins.set(manifest.name, { compiled, revision: 0, registeredAt: 0 });
        this.reindex();
      }
    } finally {
      this.plugins.clear();
      for (const [name, plugin] of known) this.plugins.set(name, plugin);
      this.reindex();
    }
  }

  /** Calls `listener` after every registration that changed a plugin. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /**
   * Runs `work` inside the commit of every registration that changes a plugin, with the
   * plugins as they are once it commits (declared schedules are written in the commit of
   * the manifest that declares them). A throw undoes the registration.
   */
  inRegistrationCommit(work: (tx: Tx, plugins: RegisteredPlugin[]) => void): void {
    this.inCommit.push(work);
  }

  private checkOwnership(compiled: CompiledManifest): void {
    for (const entry of compiled.eventTypes) {
      const owner = this.eventTypes.get(entry.type)?.plugin;
      if (owner !== undefined && owner !== entry.plugin) {
        fail("invalid_manifest", `event type ${entry.type} is already declared by plugin ${owner}`, [
          { field: `events.${entry.type}`, description: `declared by plugin ${owner}` },
        ]);
      }
    }
    const others = [...this.plugins.values()].filter((p) => p.compiled.manifest.name !== compiled.manifest.name);
    const clashes = [
      ...collectionConflicts(
        compiled,
        others.map((p) => p.compiled),
      ),
      ...scheduleViolations(compiled, others),
    ];
    if (clashes.length > 0)
      fail("invalid_manifest", `invalid plugin manifest ${compiled.manifest.name}: ${clashes[0].field}: ${clashes[0].description}`, clashes, {
        plugin: compiled.manifest.name,
      });
  }

  private reindex(): void {
    const index = new Map<string, EventTypeEntry>();
    for (const plugin of this.plugins.values()) for (const entry of plugin.compiled.eventTypes) index.set(entry.type, entry);
    this.eventTypes = index;
    this.collections = CollectionIndex.build([...this.plugins.values()].map((p) => p.compiled));
    this.actions = new Map([...this.plugins.values()].flatMap((p) => p.compiled.actions.map((a) => [a.name, a] as const)));
    this.retention = new Map();
    for (const { compiled } of this.plugins.values()) {
      if (compiled.retention.length === 0) continue;
      for (const entry of compiled.eventTypes) this.retention.set(entry.type, compiled.retention);
      for (const c of compiled.collections)
        if (c.writesEvents) for (const op of ["created", "updated", "deleted"]) this.retention.set(`${c.name}.${op}`, compiled.retention);
    }
  }
}
