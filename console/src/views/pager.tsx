// Previous/Next over a paged list RPC: the page tokens seen so far are a stack, the last one is the
// page shown; Previous pops it, Next pushes the page's next_page_token.
import { useState } from "react";

export interface PageTokens {
  /** The token of the page to show ("" for the first). */
  token: string;
  /** Back to the first page (when the list's filter changes). */
  reset: () => void;
  back: (() => void) | undefined;
  forward: (next: string | undefined) => (() => void) | undefined;
}

export function usePageTokens(): PageTokens {
  const [tokens, setTokens] = useState<string[]>([""]);
  return {
    token: tokens[tokens.length - 1],
    reset: () => setTokens([""]),
    back: tokens.length === 1 ? undefined : () => setTokens((t) => t.slice(0, -1)),
    forward: (next) => (next ? () => setTokens((t) => [...t, next]) : undefined),
  };
}

export function Pager({ pages, next }: { pages: PageTokens; next: string | undefined }) {
  const forward = pages.forward(next);
  return (
    <div className="pager">
      <button type="button" disabled={!pages.back} onClick={pages.back}>
        Previous
      </button>
      <button type="button" disabled={!forward} onClick={forward}>
        Next
      </button>
    </div>
  );
}
