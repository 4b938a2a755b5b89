// Original file: proto/api.proto


export interface AuthConfig {
  'username'?: (string);
  'password'?: (string);
  'auth'?: (string);
  'server_address'?: (string);
  'identity_token'?: (string);
  'registry_token'?: (string);
}

export interface AuthConfig__Output {
  'username': (string);
  'password': (string);
  'auth': (string);
  'server_address': (string);
  'identity_token': (string);
  'registry_token': (string);
}
