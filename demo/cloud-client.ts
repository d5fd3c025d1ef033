/**
 * The tour's client of the mock cloud: it plays "a person in the console, or another system" (list, create,
 * recolor, delete shapes) and reads the request log for evidence — the shared outside-in client
 * (mock-cloud/src/client.ts), under the tour's own client id.
 */
import { CloudCallError, CloudHttpClient } from "@shapes/mock-cloud";

export type { CloudShape, RequestLogEntry, ShapeCreate } from "@shapes/mock-cloud";
export { CloudCallError };

/** The client id the tour sends (X-Client-Id): its writes are told apart from the controller's in the request log. */
export const TOUR_CLIENT_ID = "shapes-tour";

/** The cloud's API, and its admin endpoints with the admin token, as a person would use them. */
export class CloudClient extends CloudHttpClient {
  constructor(baseUrl: string, token: string, adminToken: string) {
    super({ baseUrl, token, adminToken, clientId: TOUR_CLIENT_ID });
  }

  /** Deletes a shape; an absent one is fine (the tour cleans up what may already be gone). */
  override async delete(id: string): Promise<void> {
    try {
      await super.delete(id);
    } catch (error) {
      if (!(error instanceof CloudCallError && error.status === 404)) throw error;
    }
  }
}
