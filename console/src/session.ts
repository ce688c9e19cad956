// Who this tab is (api.ts whoAmI), for the views that hide what the principal may not do.
import { createContext, useContext } from "react";
import type { Session } from "./api.js";

export const SessionContext = createContext<Session>({ admin: false, signedIn: false });

/** The tab's session. */
export function useSession(): Session {
  return useContext(SessionContext);
}
