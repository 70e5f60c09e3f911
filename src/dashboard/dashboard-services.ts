import type { DashboardSession } from '../store/store.js';
import type { AccountService } from './account-service.js';
import type { AttemptThrottle } from './attempt-throttle.js';
import type { SetupCode } from './setup-code.js';

/** What the dashboard's routes share; decorated once as `app.dashboard` inside its scope. */
export interface DashboardServices {
  accounts: AccountService;
  setupCode: SetupCode;
  /** Failed sign-ins per account (by email). */
  accountThrottle: AttemptThrottle;
  /** Failed sign-ins and setup codes per client address. */
  addressThrottle: AttemptThrottle;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Only inside the dashboard's scope (`/dashboard`). */
    dashboard: DashboardServices;
  }
  interface FastifyRequest {
    /** The signed-in owner's session, set by the dashboard's session hook. */
    dashboardSession?: DashboardSession;
    /** The session cookie's secret, when it named a live session. */
    dashboardSessionSecret?: string;
  }
}
