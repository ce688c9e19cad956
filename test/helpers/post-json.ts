import * as http from "node:http";

/**
 * POSTs `body` as JSON to `path` on the owner at 127.0.0.1:`port` over HTTP/1.1 (Connect's JSON
 * protocol, as curl or a browser would), with `token` as the bearer token when given; resolves
 * with the status and the parsed answer (`{}` when empty).
 */
export function postJson(port: number, path: string, body: unknown, token?: string): Promise<{ status: number; body: { code?: string; message?: string } }> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method: "POST", agent: false, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || "{}") }));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}
