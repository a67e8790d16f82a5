graph g {
  input %x: f32[4]
  %y = neg(%x)  @ "model.py":99999999999
  output %y
}
