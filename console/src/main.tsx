// The Chronolog console: a single-page app served by the owner under /console/. It asks for a
// bearer token only when the owner wants one, then shows the log, processors, time, executors
// and plugins through the public API (api.ts). Routing is in the browser (wouter, base
// /console); data is fetched and cached by TanStack Query. A standby owner's console says so,
// links to the leader's and shows the read views only (its role asked every few seconds: a
// standby that takes over becomes a leader's console).

import { QueryCache, QueryClient, QueryClientProvider, useQuery, useQueryClient } from "@tanstack/react-query";
import { StrictMode, useState, type FormEvent } from "react";
import { createRoot } from "react-dom/client";
import { Link, Redirect, Route, Router, Switch, useLocation, useRoute, useSearch } from "wouter";
import { errorText, getToken, isUnauthenticated, ownerStandby, setToken, whoAmI, type Session, type Standby } from "./api.js";
import { SessionContext } from "./session.js";
import { CallsView } from "./views/calls.js";
import { CollectionView, DocumentPage } from "./views/collections.js";
import { EventPage } from "./views/event.js";
import { ExecutorsView } from "./views/executors.js";
import { LogView } from "./views/log.js";
import { PluginsView } from "./views/plugins.js";
import { ProcessorsView } from "./views/processors.js";
import { TimeView } from "./views/time.js";
import { StreamView } from "./views/streams.js";
import "./style.css";

const queryClient: QueryClient = new QueryClient({
  // A token that stops working (removed from the config) brings the sign-in form back.
  queryCache: new QueryCache({
    onError: (error, query) => {
      if (isUnauthenticated(error) && query.queryKey[0] !== "whoami") void queryClient.invalidateQueries({ queryKey: ["whoami"] });
    },
  }),
  defaultOptions: {
    queries: {
      // An auth error is an answer, not a failure to retry.
      retry: (count, error) => !isUnauthenticated(error) && count < 2,
      refetchOnWindowFocus: false,
      staleTime: 1000,
    },
  },
});

function SignIn({ error }: { error: string }) {
  const [value, setValue] = useState("");
  const client = useQueryClient();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setToken(value.trim());
    void client.invalidateQueries();
  };
  return (
    <main className="signin">
      <h1>Chronolog console</h1>
      <p>This owner has principals: sign in with a principal's bearer token. It is kept for this tab only.</p>
      <form onSubmit={submit}>
        <input id="token" type="password" autoComplete="off" placeholder="bearer token" value={value} onChange={(e) => setValue(e.target.value)} />
        <button id="sign-in" type="submit">
          Sign in
        </button>
      </form>
      {getToken() && (
        <p className="error" id="signin-error">
          {error}
        </p>
      )}
    </main>
  );
}

function NavLink({ href, children }: { href: string; children: string }) {
  const [active] = useRoute(href === "/" ? "/" : `${href}/*?`);
  return (
    <Link href={href} className={active ? "active" : ""} data-nav={children.split(" ")[0].toLowerCase()}>
      {children}
    </Link>
  );
}

/** Polling of the owner's role: a standby that takes over shows a leader's console within this. */
const rolePollMs = 5000;

function StandbyBanner({ standby }: { standby: Standby }) {
  // The leader's console at the same view (path and filters), on the leader's URL as the lease names it.
  // (location.search as it is: wouter's search is decoded once already; it tells when it changed.)
  const [path] = useLocation();
  useSearch();
  const leaderConsole = `${standby.leaderUrl.replace(/\/+$/, "")}/console${path}${location.search}`;
  return (
    <p id="standby" className="standby">
      This owner is a <strong>standby</strong>: it shows what the leader committed and takes no changes (pausing, triggering, moving cursors, redriving,
      cancelling are done at the leader).{" "}
      {standby.leaderUrl ? (
        <>
          The leader's console:{" "}
          <a id="leader-console" href={leaderConsole}>
            {standby.leaderUrl}/console/
          </a>
          {getToken() && " (sign in there with your token)"}
        </>
      ) : (
        "No leader is known yet."
      )}
    </p>
  );
}

function Shell({ session }: { session: Session }) {
  const client = useQueryClient();
  const signOut = () => {
    setToken("");
    void client.resetQueries();
  };
  return (
    <>
      <header>
        <strong>Chronolog</strong>
        <nav>
          <NavLink href="/">Log</NavLink>
          {session.admin && <NavLink href="/processors">Processors</NavLink>}
          <NavLink href="/calls">Calls</NavLink>
          <NavLink href="/time">Time</NavLink>
          <NavLink href="/streams">Streams</NavLink>
          {session.admin && !session.standby && <NavLink href="/executors">Executors</NavLink>}
          <NavLink href="/plugins">Plugins & collections</NavLink>
        </nav>
        <span id="who" data-admin={String(session.admin)} data-role={session.standby ? "standby" : "leader"}>
          {session.standby && (
            <>
              <span className="badge warn">standby</span>{" "}
            </>
          )}
          {session.signedIn ? (session.admin ? "admin" : "client (no admin actions)") : "local admin (no config)"}
          {session.signedIn && (
            <button type="button" className="link" onClick={signOut}>
              sign out
            </button>
          )}
        </span>
      </header>
      <main>
        {session.standby && <StandbyBanner standby={session.standby} />}
        <Switch>
          <Route path="/">{() => <LogView />}</Route>
          <Route path="/events/:id">{(p) => <EventPage id={decodeURIComponent(p.id)} />}</Route>
          <Route path="/processors">{() => (session.admin ? <ProcessorsView /> : <NeedsAdmin />)}</Route>
          <Route path="/time">{() => <TimeView />}</Route>
          <Route path="/streams">{() => <StreamView />}</Route>
          <Route path="/executors">
            {() => (!session.admin ? <NeedsAdmin /> : session.standby ? <OnTheLeader what="Executors connect to the leader" /> : <ExecutorsView />)}
          </Route>
          <Route path="/calls">{() => <CallsView />}</Route>
          <Route path="/plugins">{() => <PluginsView />}</Route>
          <Route path="/collections/:name">{(p) => <CollectionView name={decodeURIComponent(p.name)} />}</Route>
          <Route path="/collections/:name/:id">{(p) => <DocumentPage collection={decodeURIComponent(p.name)} id={decodeURIComponent(p.id)} />}</Route>
          <Route>{() => <Redirect to="/" />}</Route>
        </Switch>
      </main>
    </>
  );
}

function NeedsAdmin() {
  return <p className="note">This view needs the admin role.</p>;
}

function OnTheLeader({ what }: { what: string }) {
  return (
    <p className="note" id="on-the-leader">
      {what}: this view is on the leader's console.
    </p>
  );
}

function App() {
  const who = useQuery({ queryKey: ["whoami"], queryFn: whoAmI, staleTime: Infinity });
  // The role needs no token; until it is known (or when health cannot answer) the page acts as a leader's: the owner refuses what it does not take.
  const role = useQuery({ queryKey: ["role"], queryFn: ownerStandby, refetchInterval: rolePollMs, staleTime: 0 });
  const standby = role.data ?? null;
  if (who.isPending || role.isPending) return <p className="note">connecting…</p>;
  if (who.isError) {
    if (isUnauthenticated(who.error)) return <SignIn error={errorText(who.error)} />;
    return (
      <p className="error" id="fatal">
        {errorText(who.error)}
      </p>
    );
  }
  const session: Session = { ...who.data, standby };
  return (
    <SessionContext.Provider value={session}>
      <Shell session={session} />
    </SessionContext.Provider>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <Router base="/console">
        <App />
      </Router>
    </QueryClientProvider>
  </StrictMode>,
);
