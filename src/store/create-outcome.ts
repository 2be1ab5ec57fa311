/** What creating a task record did: written, refused at the owner's live-task limit, or the store is full. */
export type CreateTaskOutcome = 'created' | 'owner-limit' | 'full';
