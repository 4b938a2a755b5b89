// Original file: proto/api.proto


export interface ImageSpec {
  'image'?: (string);
  'annotations'?: ({[key: string]: string});
  'user_specified_image'?: (string);
  'runtime_handler'?: (string);
  'image_ref'?: (string);
}

export interface ImageSpec__Output {
  'image': (string);
  'annotations': ({[key: string]: string});
  'user_specified_image': (string);
  'runtime_handler': (string);
  'image_ref': (string);
}
