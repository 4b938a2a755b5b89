// Original file: proto/api.proto


export interface RestoredContainer {
  'name'?: (string);
  'container_id'?: (string);
}

export interface RestoredContainer__Output {
  'name': (string);
  'container_id': (string);
}
