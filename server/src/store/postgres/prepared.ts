import type { Command, Outcome } from "./pipeline.js";
import type { NativeClient } from "./native-client.js";

/** A statement of {@link PreparedStatements}: its name, parameter count, and whether it was sent to be prepared. */
interface Statement {
  name: string;
  count: number;
  sent: boolean;
}

/**
 * The statements prepared on one connection, by SQL: each is named the first time it is used and
 * prepared the first time it is sent, inside the pipeline that first sends it (its Parse just before
 * the command; no round trip of its own: {@link withPrepares}), or at once by {@link ready} for a
 * call made outside a pipeline. Statements of the same SQL share a name: a module that prepares a
 * statement per call (a query over a list of types, say) prepares it once on the server.
 */
export class PreparedStatements {
  private readonly byText = new Map<string, Statement>();
  /** The SQL of each name. */
  private readonly textOf = new Map<string, string>();

  constructor(private readonly client: NativeClient) {}

  /** The name `text` is (or will be) prepared under, without a round trip. */
  nameOf(text: string, count: number): string {
    let statement = this.byText.get(text);
    if (!statement) {
      statement = { name: `s${this.byText.size + 1}`, count, sent: false };
      this.byText.set(text, statement);
      this.textOf.set(statement.name, text);
    }
    return statement.name;
  }

  /** The name `text` is prepared under, preparing it now (a round trip) if it was never sent. */
  ready(text: string, count: number): string {
    const name = this.nameOf(text, count);
    const statement = this.byText.get(text)!;
    if (!statement.sent) {
      this.client.prepareSync(name, text, count);
      statement.sent = true;
    }
    return name;
  }

  /**
   * `commands` with the Parse of each named statement not sent before just before the first command
   * naming it; those statements count as sent from now on ({@link settle} takes that back for one
   * whose Parse failed or did not run).
   */
  withPrepares(commands: Command[]): Command[] {
    let out: Command[] | undefined;
    for (let i = 0; i < commands.length; i++) {
      const name = commands[i].name;
      const text = name === undefined ? undefined : this.textOf.get(name);
      const statement = text === undefined ? undefined : this.byText.get(text);
      if (!statement || statement.sent) {
        out?.push(commands[i]);
        continue;
      }
      out ??= commands.slice(0, i);
      out.push({ text: text!, name, prepare: statement.count }, commands[i]);
      statement.sent = true;
    }
    return out ?? commands;
  }

  /**
   * The outcomes of the commands given to {@link withPrepares} from those of what it made (`sent`):
   * a Parse's outcome is left out; one that failed, or did not run, makes its statement unsent
   * again, and its error is the next command's.
   */
  settle(sent: Command[], outcomes: Outcome[]): Outcome[] {
    if (!sent.some((c) => c.prepare !== undefined)) return outcomes;
    const out: Outcome[] = [];
    let error: Outcome["error"];
    sent.forEach((command, i) => {
      const outcome = outcomes[i];
      if (command.prepare === undefined) {
        out.push(error && outcome ? { ...outcome, error } : outcome);
        error = undefined;
        return;
      }
      if (outcome === undefined || outcome.error) {
        const statement = this.byText.get(command.text);
        if (statement) statement.sent = false;
        error = outcome?.error;
      }
    });
    return out;
  }
}
