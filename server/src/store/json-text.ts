/**
 * The JSON text of data objects, when known without stringifying them again: the text a row was
 * read from, or the text made once when the data came in as JSON bytes. Keyed by the object itself,
 * so data replaced by another object (or made in code) is simply not found and is stringified.
 * Data objects are never changed in place once read or checked.
 */
const texts = new WeakMap<object, string>();

/** Remembers `text` as the JSON of `value` (which was parsed from it, or stringified to it). */
export function rememberJsonText(value: object, text: string): void {
  texts.set(value, text);
}

/** `value` as JSON text: the remembered text, or JSON.stringify's. */
export function jsonText(value: object): string {
  return texts.get(value) ?? JSON.stringify(value);
}
