// Who this tab is (api.ts whoAmI) and whether its owner is a standby (ownerStandby), for the
// views that hide what the principal may not do, or what a standby does not take.
import { createContext, useContext } from "react";
import type { Session } from "./api.js";

export const SessionContext = createContext<Session>({ admin: false, signedIn: false, standby: null });

/** The tab's session. */
export function useSession(): Session {
  return useContext(SessionContext);
}
