// A collection browser (CollectionService): documents found with a MongoDB filter, a page at a
// time (FindDocuments has a limit but no page token: pages follow `_id`, the next one asks for
// `_id` greater than the last shown), and a document's page (GetDocument).

import type { JsonObject } from "@bufbuild/protobuf";
import { useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link } from "wouter";
import { collections, errorText } from "../api.js";
import { json } from "../format.js";

const pageSize = 50;

export function CollectionView({ name }: { name: string }) {
  const [filterText, setFilterText] = useState("");
  const [filter, setFilter] = useState<JsonObject>({});
  const [formError, setFormError] = useState("");
  const [after, setAfter] = useState<string[]>([""]);
  const last = after[after.length - 1];
  const q = useQuery({
    queryKey: ["docs", name, json(filter), last],
    queryFn: () =>
      collections.findDocuments({
        collection: name,
        filter: last ? { $and: [filter, { _id: { $gt: last } }] } : filter,
        sort: { _id: 1 },
        limit: pageSize,
      }),
  });
  const apply = (e: FormEvent) => {
    e.preventDefault();
    try {
      const parsed: unknown = filterText.trim() ? JSON.parse(filterText) : {};
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("the filter must be a JSON object");
      setFormError("");
      setFilter(parsed as JsonObject);
      setAfter([""]);
    } catch (err) {
      setFormError(`filter: ${(err as Error).message}`);
    }
  };
  const docs = q.data?.documents ?? [];
  return (
    <section>
      <h2>
        Collection <code>{name}</code>
      </h2>
      <form className="inline" onSubmit={apply}>
        <input
          id="doc-filter"
          className="wide"
          placeholder='filter, e.g. {"status": "open"}'
          value={filterText}
          onChange={(e) => setFilterText(e.target.value)}
        />
        <button id="doc-find" type="submit">
          Find
        </button>
      </form>
      {formError && <p className="error">{formError}</p>}
      {q.isError && <p className="error">{errorText(q.error)}</p>}
      <table id="documents">
        <colgroup>
          <col className="id" />
          <col />
        </colgroup>
        <thead>
          <tr>
            <th>_id</th>
            <th>document</th>
          </tr>
        </thead>
        <tbody>
          {docs.map((d) => (
            <tr key={d.id} data-id={d.id}>
              <td title={d.id}>
                <Link href={`/collections/${encodeURIComponent(name)}/${encodeURIComponent(d.id)}`}>{d.id}</Link>
              </td>
              <td className="data" title={json(d.doc)}>
                {json(d.doc)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {q.data && docs.length === 0 && <p className="note">No documents match.</p>}
      <div className="pager">
        <button type="button" disabled={after.length === 1} onClick={() => setAfter((a) => a.slice(0, -1))}>
          Previous
        </button>
        <button type="button" disabled={docs.length < pageSize} onClick={() => setAfter((a) => [...a, docs[docs.length - 1].id])}>
          Next
        </button>
      </div>
    </section>
  );
}

export function DocumentPage({ collection, id }: { collection: string; id: string }) {
  const q = useQuery({ queryKey: ["doc", collection, id], queryFn: () => collections.getDocument({ collection, id }) });
  return (
    <section id="document" data-id={id}>
      <h2>
        <Link href={`/collections/${encodeURIComponent(collection)}`}>{collection}</Link> / {id}
      </h2>
      {q.isError && <p className="error">{errorText(q.error)}</p>}
      {q.data && <pre id="document-body">{json(q.data.document?.doc, 2)}</pre>}
    </section>
  );
}
