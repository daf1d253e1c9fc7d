/** What an endpoint can be sent: the alert lifecycle, authorizations waiting for a person, and `test`. */
export const EVENT_TYPES = ['alert.opened', 'alert.resolved', 'alert.reopened', 'alert.escalated', 'authorization.pending', 'authorization.decided', 'test'] as const;
export type EventType = (typeof EVENT_TYPES)[number];
