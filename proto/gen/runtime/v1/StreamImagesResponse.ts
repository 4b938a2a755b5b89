// Original file: proto/api.proto

import type { Image as _runtime_v1_Image, Image__Output as _runtime_v1_Image__Output } from '../../runtime/v1/Image.js';

export interface StreamImagesResponse {
  'images'?: (_runtime_v1_Image)[];
}

export interface StreamImagesResponse__Output {
  'images': (_runtime_v1_Image__Output)[];
}
