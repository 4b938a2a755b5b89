// How the node ends a pod on its own (evicted, preempted, the node shutting down): the final
// status's reason and message, and the message of the DisruptionTarget condition that says so.
export interface NodeEnded {
  reason: string;
  message: string;
  /** The DisruptionTarget condition's message (TerminationByKubelet); none for a pod that gets no condition. */
  disruptionTarget?: string;
}
