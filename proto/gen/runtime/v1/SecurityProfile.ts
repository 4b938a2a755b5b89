// Original file: proto/api.proto


// Original file: proto/api.proto

export const _runtime_v1_SecurityProfile_ProfileType = {
  RuntimeDefault: 'RuntimeDefault',
  Unconfined: 'Unconfined',
  Localhost: 'Localhost',
} as const;

export type _runtime_v1_SecurityProfile_ProfileType =
  | 'RuntimeDefault'
  | 0
  | 'Unconfined'
  | 1
  | 'Localhost'
  | 2

export type _runtime_v1_SecurityProfile_ProfileType__Output = typeof _runtime_v1_SecurityProfile_ProfileType[keyof typeof _runtime_v1_SecurityProfile_ProfileType]

export interface SecurityProfile {
  'profile_type'?: (_runtime_v1_SecurityProfile_ProfileType);
  'localhost_ref'?: (string);
}

export interface SecurityProfile__Output {
  'profile_type': (_runtime_v1_SecurityProfile_ProfileType__Output);
  'localhost_ref': (string);
}
