/**
 * Whether this process has been asked to stop. From then on `/readyz` answers 503, so that
 * load balancers and Kubernetes stop sending it new work while it finishes what it has
 * (see `stopGracefully`). One per process, decorated with the other services.
 */
export class DrainState {
  #draining = false;

  get draining(): boolean {
    return this.#draining;
  }

  /** Starts draining; there is no way back but a new process. */
  begin(): void {
    this.#draining = true;
  }
}
