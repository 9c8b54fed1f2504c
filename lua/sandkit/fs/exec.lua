return { backend = function() return {} end }
