// Original file: proto/api.proto

import type { Long } from '@grpc/proto-loader';

export interface PsiData {
  'Total'?: (number | string | Long);
  'Avg10'?: (number | string);
  'Avg60'?: (number | string);
  'Avg300'?: (number | string);
}

export interface PsiData__Output {
  'Total': (string);
  'Avg10': (number);
  'Avg60': (number);
  'Avg300': (number);
}
